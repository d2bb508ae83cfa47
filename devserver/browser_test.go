package devserver

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// TestWebUIInABrowser: the real Web UI, in a real browser (Debian's
// chromium), works through the gate once the printed link has been opened:
// it lists the owner's job. A browser without the link gets the 401 page,
// and the used link does not let a second browser in.
func TestWebUIInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server and a browser")
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium is needed for the Web UI test: %v", err)
		}
		t.Skipf("chromium is needed for the Web UI test: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := Start(ctx, Options{Logger: quietLogger()})
	require.NoError(t, err)
	defer func() { _ = srv.Stop() }()
	c, err := client.DialContext(ctx, client.Options{
		HostPort: srv.FrontendAddr(), Logger: sdklog.NewStructuredLogger(quietLogger()),
		ConnectionOptions: client.ConnectionOptions{TLS: srv.ClientTLS()},
	})
	require.NoError(t, err)
	defer c.Close()
	const jobID = "job-in-the-browser"
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: jobID, TaskQueue: "nobody-serves-this"}, "AgentWorkflow")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId = '" + jobID + "'"})
		return err == nil && len(resp.GetExecutions()) == 1
	}, 30*time.Second, 100*time.Millisecond)

	// newBrowser is a fresh browser profile: no cookies.
	newBrowser := func() (context.Context, context.CancelFunc) {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()))
		actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		return bctx, func() { bcancel(); acancel() }
	}

	owner, closeOwner := newBrowser()
	defer closeOwner()
	require.NoError(t, chromedp.Do(owner, chromedp.Navigate(srv.UILoginURL())))
	wait, cancelWait := context.WithTimeout(owner, 90*time.Second)
	defer cancelWait()
	// The UI renders the job list from its API, through the gate.
	require.NoError(t, chromedp.Do(wait, chromedp.WaitVisible(chromedp.Search(`//a[contains(., "`+jobID+`")]`))),
		"the owner's browser should list the job")
	url, err := chromedp.Run(owner, chromedp.Location())
	require.NoError(t, err)
	require.NotContains(t, url, "token=", "the token leaves the address bar")

	for name, target := range map[string]string{
		"no link":       srv.UIAddr() + "/namespaces/default/workflows",
		"the used link": srv.UILoginURL(),
	} {
		other, closeOther := newBrowser()
		err := chromedp.Do(other, chromedp.Navigate(target))
		body, terr := chromedp.Run(other, chromedp.Text(chromedp.CSS("body")))
		closeOther()
		require.NoError(t, err, name)
		require.NoError(t, terr, name)
		require.True(t, strings.Contains(body, "one-time token"), "%s: %q", name, body)
		require.NotContains(t, body, jobID, name)
	}
}
