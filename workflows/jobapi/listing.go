package jobapi

import "time"

// ListingMemo is the memo key under which a job keeps its Listing up to
// date, so `starter jobs` reads every job from one visibility call
// (ListWorkflowExecutions) on any server, with no query per job and no
// custom search attribute to register.
const ListingMemo = "custosJob"

// The statuses of a Listing.
const (
	ListWorking        = "working"
	ListWaitingPerson  = "waiting-for-person"
	ListWaitingMessage = "waiting-for-message"
	ListParked         = "parked"
	ListEnded          = "ended"
)

// Listing is what a job shows in the list of jobs. Status is one of the
// List* constants; Why says why a job is parked ("budget", "disk space",
// "model endpoint") or how it ended ("done", "max turns", "ended",
// "idle"); Since is when the listing last changed: the job's last activity.
type Listing struct {
	Status    string       `json:"status"`
	Why       string       `json:"why,omitempty"`
	Phase     string       `json:"phase"`
	Task      string       `json:"task"`
	Workspace string       `json:"workspace"`
	Host      string       `json:"host,omitempty"`
	Mode      string       `json:"mode,omitempty"`
	Turn      int          `json:"turn"`
	Since     time.Time    `json:"since"`
	Waiting   []ListedCall `json:"waiting,omitempty"`
}

// ListedCall is a call that waits for a person.
type ListedCall struct {
	Call    string `json:"call"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
}
