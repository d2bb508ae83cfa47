package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/custos-dev/custos/app"
	"github.com/custos-dev/custos/demomodel"
	"github.com/custos-dev/custos/internal/testenv"
	"github.com/custos-dev/custos/workflows/jobapi"
)

// starter run in a real terminal (tmux) is a conversation: after the answer
// it asks for the next message; a line typed while the job works is sent
// as a message and answered after the work in hand; an empty line leaves
// the job waiting and says how to come back, and starter say does. What
// the model writes reaches the screen as text, never as escape sequences.
func TestTerminalConversation(t *testing.T) {
	srv := startServer(t, "")
	c := testenv.Dial(t, srv)
	var requests atomic.Int32
	slowSecond := make(chan struct{})
	model, base := testenv.StartModel(t, func(req openai.ChatCompletionRequest) (demomodel.Reply, error) {
		switch requests.Add(1) {
		case 1:
			return demomodel.Say("FIRST answer \x1b]0;pwned\x07with a title change"), nil
		case 2:
			// The job works on the follow-up long enough for a line to be
			// typed meanwhile.
			<-slowSecond
			return demomodel.Say("SECOND answer"), nil
		default:
			return demomodel.Say(fmt.Sprintf("ANSWER %d", requests.Load())), nil
		}
	})
	// A host of its own: on a server other tests share, starter run must
	// not route the job to another test's host.
	host := fmt.Sprintf("term-conv-%d", time.Now().UnixNano())
	testenv.StartWorkers(t, c, base, app.Options{Host: host})
	ws := testenv.Workspace(t)
	id := fmt.Sprintf("terminal-conversation-%d", time.Now().UnixNano())
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm-256color", "USER=tester",
		"TEMPORAL_ADDRESS=" + srv.FrontendAddr(), "XDG_CONFIG_HOME=" + t.TempDir()}, tlsEnv(srv)...)
	starter := buildStarter(t)
	term := startTerminal(t, env, starter, "run", "--host", host, "--workspace", ws, "--id", id, "start the conversation")

	screen := term.waitFor("FIRST answer", 1, pendingWait)
	term.waitFor("\n> ", 1, pendingWait)
	assert.NotContains(t, term.screen(true), "\x1b]0;pwned", "the model's escape sequence reached the terminal")
	assert.Contains(t, screen, "⟨ESC⟩]0;pwned⟨BEL⟩")

	term.typeLine("now add a test")
	require.Eventually(t, func() bool { return requests.Load() == 2 }, pendingWait, 50*time.Millisecond)
	term.typeLine("and use tabs")
	term.waitFor("queued in "+id, 1, pendingWait)
	close(slowSecond)
	term.waitFor("SECOND answer", 1, pendingWait)
	term.waitFor("ANSWER 3", 1, pendingWait)
	term.waitFor("\n> ", 2, pendingWait)
	term.typeLine("")
	term.waitFor("waits for your next message: starter say "+id, 1, pendingWait)

	reqs := model.Requests()
	require.Len(t, reqs, 3)
	var users []string
	for _, m := range reqs[2].Messages {
		if m.Role == openai.ChatMessageRoleUser {
			users = append(users, m.Content)
		}
	}
	assert.Equal(t, []string{"start the conversation", "now add a test", "and use tabs"}, users,
		"the line typed while the job worked reached the model after the work in hand")
	st, err := testenv.Status(c, id)
	require.NoError(t, err)
	assert.Equal(t, jobapi.PhaseWaitingMessage, st.State)

	// From another shell: say, then end.
	say := exec.Command(starter, "say", id, "one more")
	say.Env = env
	out, err := say.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "ANSWER 4")
	end := exec.Command(starter, "end", id)
	end.Env = env
	out, err = end.CombinedOutput()
	require.NoError(t, err, "%s", out)
	res := testenv.Finished(t, c, id, time.Minute)
	assert.Equal(t, "ended", res.Reason)
	assert.True(t, strings.HasPrefix(res.Answer, "ANSWER 4"))
	var who []string
	for _, r := range testenv.Audit(t, c, id) {
		if r.Event == "message" {
			who = append(who, r.Approver+"/"+r.Channel)
		}
	}
	assert.Equal(t, []string{"tester/terminal", "tester/terminal", "tester/cli"}, who)
}
