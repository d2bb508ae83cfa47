package tokens

import (
	"testing"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/workflows/jobapi"
)

func TestCapsAndTheirText(t *testing.T) {
	for _, c := range [][3]int{{0, 0, 0}, {0, 5, 5}, {7, 0, 7}, {7, 5, 5}, {-1, -1, 0}} {
		if got := Tighter(c[0], c[1]); got != c[2] {
			t.Errorf("Tighter(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
	s := jobapi.BudgetStatus{TokensPerJob: 100, UsedByJob: 100, TokensPerMessage: 10, UsedByMessage: 10}
	if Over(s) != "job" {
		t.Errorf("Over = %q, want job", Over(s))
	}
	s.TokensPerJob = 0
	if Over(s) != "message" || Text(s, "message") != "10 of 10 tokens since the last message" {
		t.Errorf("Over = %q, Text = %q", Over(s), Text(s, "message"))
	}
	if Over(jobapi.BudgetStatus{UsedByJob: 1 << 30}) != "" || CapText(0) != "no cap" || CapText(3) != "3 tokens" {
		t.Error("no cap is reached, or a cap's text is wrong")
	}
}

func TestWindowAndThreshold(t *testing.T) {
	if WindowOf(jobapi.JobInput{ContextWindow: 9000, Model: "x"}, 5) != 9000 || WindowOf(jobapi.JobInput{}, 5) != 5 ||
		WindowOf(jobapi.JobInput{}, 0) != api.DefaultContextWindow {
		t.Error("WindowOf does not prefer the job's, then the worker's, then the default")
	}
	if n := WindowInError("This model's maximum context length is 8192 tokens. However"); n != 8192 {
		t.Errorf("WindowInError = %d", n)
	}
	if over, est := OverThreshold(0, 700, 101, 1000); !over || est != 801 {
		t.Errorf("OverThreshold(default) = %v, %d", over, est)
	}
	if over, _ := OverThreshold(0.9, 700, 101, 1000); over {
		t.Error("OverThreshold(0.9) compacts at 801 of 1000")
	}
}

// A child's share is the smaller of what is left of the job's and the
// message's budget, split among the answer's Task calls, never below one
// token; no cap gives no share.
func TestShareSplitsWhatIsLeft(t *testing.T) {
	for _, c := range []struct {
		s     jobapi.BudgetStatus
		tasks int
		want  int
	}{
		{jobapi.BudgetStatus{}, 3, 0},
		{jobapi.BudgetStatus{TokensPerJob: 1000, UsedByJob: 400}, 3, 200},
		{jobapi.BudgetStatus{TokensPerJob: 1000, UsedByJob: 400, TokensPerMessage: 300, UsedByMessage: 100}, 2, 100},
		{jobapi.BudgetStatus{TokensPerMessage: 300, UsedByMessage: 100}, 0, 200},
		{jobapi.BudgetStatus{TokensPerJob: 1000, UsedByJob: 5000}, 4, 1},
	} {
		if got := Share(c.s, c.tasks); got != c.want {
			t.Errorf("Share(%+v, %d) = %d, want %d", c.s, c.tasks, got, c.want)
		}
	}
}
