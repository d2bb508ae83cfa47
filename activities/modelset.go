package activities

import (
	"net/http"

	"github.com/custos-dev/custos/activities/model"
)

// NewModel builds the model activity (model.New) that offers custos' tools
// and the Task tool as each request asks (offeredTools).
func NewModel(baseURL, apiKey, name string, httpClient *http.Client) *model.Model {
	m := model.New(baseURL, apiKey, name, httpClient)
	m.Offer = offeredTools
	return m
}
