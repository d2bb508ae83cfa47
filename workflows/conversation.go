package workflows

import (
	"github.com/custos-dev/custos/activities/api"
)

// blobs is where the large contents of the model's answers are, beside
// the transcript (api.BlobDir).
func (j *job) blobs() string {
	return api.BlobDir(j.st.JobFiles(j.in.Workspace, j.id))
}

// conversation is the model activity's view of the job's transcript.
func (j *job) conversation() *api.Conversation {
	return &api.Conversation{
		Workspace: j.in.Workspace, JobID: j.id, Files: j.st.Files,
		FirstSeq: j.st.SavedMessages + 1, Append: j.st.Unsaved(),
		Total: j.st.Total(), View: j.st.View,
	}
}
