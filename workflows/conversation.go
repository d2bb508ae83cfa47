package workflows

import (
	openai "github.com/sashabaranov/go-openai"

	"github.com/custos-dev/custos/activities/api"
)

// total is how many messages the conversation has.
func (s *State) total() int { return s.MessageBase + len(s.Messages) }

// unsaved are the messages the transcript may not hold yet.
func (s *State) unsaved() []openai.ChatCompletionMessage {
	return s.Messages[max(s.SavedMessages-s.MessageBase, 0):]
}

// stored records that the transcript holds the first n messages, and lets
// them go from memory (and so from continue-as-new's input): the last
// message is kept, since the loop may still read it.
func (s *State) stored(n int) {
	s.SavedMessages = n
	if drop := min(n, s.total()-1) - s.MessageBase; drop > 0 {
		s.Messages = append([]openai.ChatCompletionMessage(nil), s.Messages[drop:]...)
		s.MessageBase += drop
	}
}

// visibleCount is how many messages the model will be sent.
func (s *State) visibleCount() int { return s.View.VisibleCount(s.total()) }

// blobs is where the large contents of the model's answers are, beside
// the transcript (api.BlobDir).
func (j *job) blobs() string {
	return api.BlobDir(j.st.files(j.in.Workspace, j.id))
}

// conversation is the model activity's view of the job's transcript.
func (j *job) conversation() *api.Conversation {
	return &api.Conversation{
		Workspace: j.in.Workspace, JobID: j.id, Files: j.st.Files,
		FirstSeq: j.st.SavedMessages + 1, Append: j.st.unsaved(),
		Total: j.st.total(), View: j.st.View,
	}
}
