package slack

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/slack-go/slack"
)

// maxBody bounds what the endpoint reads. Interaction payloads carry the
// whole message they came from, Block Kit and all; 1 MiB is far above what
// Slack sends and far below what would hurt.
const maxBody = 1 << 20

// ErrUnverified is returned for a request that is not provably from Slack.
var ErrUnverified = errors.New("request not verified as coming from Slack")

// verifyRequest reads r's body and checks it as Slack documents
// (https://docs.slack.dev/authentication/verifying-requests-from-slack/):
// X-Slack-Signature must be "v0=" + hex HMAC-SHA256 of
// "v0:{X-Slack-Request-Timestamp}:{raw body}" under the signing secret,
// compared in constant time, and the timestamp within five minutes of now
// (either way: a replay of an old request and a request stamped in the
// future are both refused). Nothing of the body is used before this passes.
func verifyRequest(r *http.Request, secret string) ([]byte, error) {
	if secret == "" {
		return nil, fmt.Errorf("%w: no signing secret configured", ErrUnverified)
	}
	sv, err := slack.NewSecretsVerifier(r.Header, secret)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnverified, err)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading body: %w", ErrUnverified, err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("%w: body larger than %d bytes", ErrUnverified, maxBody)
	}
	if _, err := sv.Write(body); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnverified, err)
	}
	if err := sv.Ensure(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnverified, err)
	}
	return body, nil
}
