package app

import (
	"fmt"

	"github.com/custos-dev/custos/demomodel"
)

// DemoModel is the offline demo model's name.
const DemoModel = "custos-demo"

// DefaultModel is the model a worker asks when OPENAI_MODEL and --model
// are unset.
const DefaultModel = "gpt-4.1"

// UseDemoModel starts the built-in offline demo model when no API key and no
// endpoint are configured, and points o at it. It returns a stop function and
// whether the demo is in use.
func UseDemoModel(o *Options) (stop func(), demo bool, err error) {
	if o.APIKey != "" || o.BaseURL != "" {
		return func() {}, false, nil
	}
	srv := demomodel.New(demomodel.Demo())
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		return nil, false, fmt.Errorf("start offline demo model: %w", err)
	}
	o.BaseURL, o.APIKey, o.Model = base, "demo", DemoModel
	return srv.Close, true, nil
}
