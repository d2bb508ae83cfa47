package workflows

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
)

// checkArgumentsVersion gates the check: histories recorded before it ran
// such calls through the pipeline (and asked people about them).
const checkArgumentsVersion = "check-arguments"

// refuseInvalidArguments refuses, before any layer asks a person, a call
// whose arguments its tool would refuse (an unknown field, a field spelled
// in another case or given twice, a wrong type, a required field missing):
// the model is told exactly what is wrong, and the refusal is audited with
// the layer that made it (the rules for the model's arguments, the hook for
// input a hook rewrote). Nothing the model adds to the arguments reaches
// the tool, so no field can ask a tool to run outside the sandbox or widen
// it. The check is pure (api.CheckArguments); histories recorded before it
// are replayed without it, and only calls it refuses ask for the version,
// so valid calls leave histories as they were.
func refuseInvalidArguments(ctx workflow.Context, tool string, input json.RawMessage, layer approval.Layer) (approval.Verdict, bool) {
	err := api.CheckArguments(tool, input)
	if err == nil {
		return approval.Verdict{}, false
	}
	if workflow.GetVersion(ctx, checkArgumentsVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return approval.Verdict{}, false
	}
	return argumentsRefusal(layer, tool, err.Error()), true
}

// argumentsRefusal is the denial of arguments a tool would refuse, said
// by the layer that found them (the rules for the model's, the hook for a
// rewrite); subject names the tool (and, for an MCP tool, its schema).
func argumentsRefusal(layer approval.Layer, subject, why string) approval.Verdict {
	what := "invalid arguments"
	if layer == approval.LayerHook {
		what = "the hook rewrote the input into invalid arguments"
	}
	return approval.Verdict{Decision: approval.Deny, Layer: layer,
		Reason: fmt.Sprintf("%s for %s: %s; nobody was asked and nothing ran", what, subject, why)}
}
