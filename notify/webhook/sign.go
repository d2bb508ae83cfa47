package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of every delivery.
const (
	HeaderSignature = "X-Custos-Signature"
	HeaderTimestamp = "X-Custos-Timestamp"
	HeaderDelivery  = "X-Custos-Delivery"
	HeaderEvent     = "X-Custos-Event"
)

// Sign is the signature header's value for body sent at ts (Unix seconds):
// "v1=" + hex(HMAC-SHA256(secret, ts + "." + body)).
func Sign(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a delivery as a receiver should (docs/webhooks.md shows
// the same steps for receivers in other code): the signature over the
// timestamp and the raw body, compared in constant time, and the
// timestamp within tolerance of now so a captured request cannot be
// replayed later.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts, sig := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if ts == "" || sig == "" {
		return errors.New("webhook: missing signature or timestamp header")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: bad timestamp %q: %w", ts, err)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook: timestamp %s is more than %s from now", ts, tolerance)
	}
	if !strings.HasPrefix(sig, "v1=") || !hmac.Equal([]byte(sig), []byte(Sign(secret, ts, body))) {
		return errors.New("webhook: signature does not match")
	}
	return nil
}
