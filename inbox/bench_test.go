package inbox

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/custos-dev/custos/workflows/jobapi"
)

// bigSnapshot is n waiting calls over n/10 jobs, each with a 20-line diff
// preview, the shape of a busy morning.
func bigSnapshot(n int) Snapshot {
	var diff strings.Builder
	diff.WriteString("--- a/svc/handler.go\n+++ b/svc/handler.go\n@@ -10,8 +10,8 @@\n")
	for i := range 17 {
		fmt.Fprintf(&diff, "%sline %d of the handler, with some code in it := call(x, y)\n", []string{" ", "-", "+"}[i%3], i)
	}
	var jobs []Job
	for j := range n / 10 {
		job := Job{ID: fmt.Sprintf("job-%03d", j), Task: "fix the failing test in ./svc and make the linter happy", Workspace: "/home/alice/src/svc", Host: "vm1"}
		for c := range 10 {
			job.Calls = append(job.Calls, jobapi.PendingAsk{CallID: fmt.Sprintf("call_%03d_%d", j, c), Tool: "Edit",
				Summary: "Edit svc/handler.go", Reason: "no rule allows Edit in default mode", Rule: "Edit(svc/handler.go)",
				Preview: diff.String(), AskedAt: t0, Deadline: t0.Add(time.Minute)})
		}
		jobs = append(jobs, job)
	}
	return Snapshot{Version: 1, At: t0, Jobs: jobs}
}

// BenchmarkPage500 serves the whole page with 500 waiting calls from the
// collector's snapshot, as a browser's GET gets it (the target: well under
// a second). Run with
//
//	go test ./inbox -run '^$' -bench BenchmarkPage500
func BenchmarkPage500(b *testing.B) {
	k := NewCollector(nil, 0, 0, nil)
	k.publish(bigSnapshot(500).Jobs, nil, t0)
	h, err := NewHandler(k, nil, Options{SessionCookie: "sess", Now: func() time.Time { return t0 }})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/custos/", nil)
	req.AddCookie(&http.Cookie{Name: "sess", Value: "one"})
	var size int
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size)/1024, "page-KiB")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/page")
}
