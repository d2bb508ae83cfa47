package activities

import (
	"context"
	"os"

	"go.temporal.io/sdk/temporal"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/internal/answerkey"
)

// VerifyAnswer reports whether a channel of these workers signed the
// answer's identity. A worker without its key cannot tell: that is a
// non-retryable error (the answer does not count), not a false verdict
// that would look like a forgery.
func (s *Settings) VerifyAnswer(_ context.Context, req api.VerifyAnswerRequest) (bool, error) {
	key, err := s.answerKey()
	if err != nil {
		return false, temporal.NewNonRetryableApplicationError("cannot check the channel's signature: "+err.Error(), "AnswerKeyError", err)
	}
	c := answerkey.Claim{Job: req.Job, Call: req.Call, Decision: req.Decision, Channel: req.Channel, ID: req.ID, Groups: req.Groups}
	return answerkey.Verify(key, c, req.Sig), nil
}

// answerKey is the workers' key (answerkey.Load), read once.
func (s *Settings) answerKey() ([]byte, error) {
	s.keyOnce.Do(func() { s.key, s.keyErr = answerkey.Load(os.Getenv, s.StateDir) })
	return s.key, s.keyErr
}
