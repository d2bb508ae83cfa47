package jobapi

// BudgetUpdate changes a job's caps: a BudgetChange, answered by the
// BudgetStatus after the change.
const BudgetUpdate = "budget"

// PhaseWaitingBudget is the status of a job parked on its budget.
const PhaseWaitingBudget = "waiting for a budget"

// BudgetChange sets the job's caps; nil leaves a cap as it is, 0 removes it.
type BudgetChange struct {
	TokensPerJob     *int   `json:"tokensPerJob,omitempty"`
	TokensPerMessage *int   `json:"tokensPerMessage,omitempty"`
	By               string `json:"by,omitempty"`
	Channel          string `json:"channel,omitempty"`
}

// BudgetStatus is the job's usage against its caps (0: no cap).
type BudgetStatus struct {
	TokensPerJob     int `json:"tokensPerJob,omitempty"`
	TokensPerMessage int `json:"tokensPerMessage,omitempty"`
	UsedByJob        int `json:"usedByJob"`
	UsedByMessage    int `json:"usedByMessage"`
	// Reached names the cap the job waits on ("job" or "message"), "" when
	// it does not.
	Reached string `json:"reached,omitempty"`
}

// Budget is the job's caps as it keeps them, once set.
type Budget struct {
	TokensPerJob     int `json:"tokensPerJob,omitempty"`
	TokensPerMessage int `json:"tokensPerMessage,omitempty"`
	// Set is true once a person set the caps: then they replace the
	// input's and the settings'.
	Set bool `json:"set,omitempty"`
	// Reached is the cap the job waits on ("" when it does not).
	Reached string `json:"reached,omitempty"`
}
