package retention

import (
	"fmt"
	"testing"
)

// BenchmarkGCPass10kJobs times a whole collection (plan and apply, in as
// many bounded passes as it takes) over 10,000 ended jobs, each with a
// 4 KiB transcript naming a 16 KiB blob and a 1 KiB audit (kept: younger
// than its retention), plus 100 open jobs whose files and blobs stay.
func BenchmarkGCPass10kJobs(b *testing.B) {
	const ws = "workspaces/app-0123456789ab/"
	var freed int64
	passes := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		state := b.TempDir()
		open := map[string]bool{}
		for j := range 10100 {
			name := fmt.Sprintf("job-%05d", j)
			ago := 40 * day
			if j >= 10000 {
				open[name] = true
			}
			put(b, state, ws+"sessions/"+name+".jsonl", 4<<10, ago, marker(j))
			put(b, state, ws+"audit/"+name+".jsonl", 1<<10, ago)
			put(b, state, ws+"sessions/blobs/"+blobName(j), 16<<10, ago)
		}
		b.StartTimer()
		var cur Cursor
		for {
			p, err := PlanPass(Input{State: state, Now: now, Policy: policy, Open: open, OpenKnown: true, Cursor: cur})
			if err != nil {
				b.Fatal(err)
			}
			r := Apply(p, nil)
			freed += r.Bytes()
			passes++
			if p.Done {
				break
			}
			cur = p.Next
		}
	}
	b.ReportMetric(float64(freed)/float64(b.N)/(1<<20), "MiB-freed/op")
	b.ReportMetric(float64(passes)/float64(b.N), "passes/op")
}
