// Package tokens holds the job workflow's token arithmetic: the budget's
// caps and what they say to people, and the context window with the
// threshold past which the job compacts its conversation. Plain numbers in,
// plain numbers and text out; it never imports workflows, which keeps the
// waits, Updates and model calls.
package tokens

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// DefaultCompactAt is the share of the context window a prompt may reach
// before the job compacts its conversation.
const DefaultCompactAt = 0.8

// Tighter is the tighter of two caps, where 0 (or less) is no cap.
func Tighter(a, b int) int {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}

// Share is a child's token cap: what is left of s's budget (of the job
// and of the message, the smaller) shared among tasks Task calls; 0 when
// the job has no cap.
func Share(s jobapi.BudgetStatus, tasks int) int {
	left := 0
	if s.TokensPerJob > 0 {
		left = max(s.TokensPerJob-s.UsedByJob, 1)
	}
	if s.TokensPerMessage > 0 {
		left = Tighter(left, max(s.TokensPerMessage-s.UsedByMessage, 1))
	}
	if left == 0 {
		return 0
	}
	return max(left/max(tasks, 1), 1)
}

// Over names the cap s's usage has reached ("job" or "message"), or "".
func Over(s jobapi.BudgetStatus) string {
	switch {
	case s.TokensPerJob > 0 && s.UsedByJob >= s.TokensPerJob:
		return "job"
	case s.TokensPerMessage > 0 && s.UsedByMessage >= s.TokensPerMessage:
		return "message"
	}
	return ""
}

// Text is the usage against the cap which ("job" or "message") for people.
func Text(s jobapi.BudgetStatus, which string) string {
	if which == "job" {
		return fmt.Sprintf("%d of %d tokens", s.UsedByJob, s.TokensPerJob)
	}
	return fmt.Sprintf("%d of %d tokens since the last message", s.UsedByMessage, s.TokensPerMessage)
}

// CapText is a cap for people.
func CapText(n int) string {
	if n <= 0 {
		return "no cap"
	}
	return fmt.Sprintf("%d tokens", n)
}

// WindowOf is a new job's window: its own setting, else the table's for
// the model it names, else what the worker says for its model.
func WindowOf(in jobapi.JobInput, worker int) int {
	switch {
	case in.ContextWindow > 0:
		return in.ContextWindow
	case in.Model != "":
		return api.ContextWindowFor(in.Model)
	case worker > 0:
		return worker
	}
	return api.DefaultContextWindow
}

var windowRe = regexp.MustCompile(`maximum context length is (\d+) tokens`)

// WindowInError reads the window from OpenAI's context_length_exceeded
// message, or 0.
func WindowInError(msg string) int {
	m := windowRe.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// OverThreshold says whether the next prompt, estimated from the usage the
// endpoint reported for the last one plus the tokens added since, would
// pass the share at of window (DefaultCompactAt when at is not in (0, 1)),
// and the estimate.
func OverThreshold(at float64, lastPrompt, pending, window int) (bool, int) {
	if at <= 0 || at >= 1 {
		at = DefaultCompactAt
	}
	est := lastPrompt + pending
	return float64(est) > at*float64(window), est
}
