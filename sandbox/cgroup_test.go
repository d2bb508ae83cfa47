package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A slot made ahead (prewarm) serves the first run: a checkout while it is
// being made waits for it rather than make a second one, its thread is in
// the slot's cgroup, and the slot comes back for the next run.
func TestV1SlotPrewarm(t *testing.T) {
	pc := v1PidsCgroup(t)
	pl := &v1Pool{parent: *pc}
	state := func() (free int, warming chan struct{}) {
		pl.mu.Lock()
		defer pl.mu.Unlock()
		return len(pl.free), pl.warming
	}
	pl.prewarm()
	_, w := state()
	if w == nil {
		t.Fatal("prewarm made no slot")
	}
	pl.prewarm() // one is being made: no second
	s, err := pl.checkout(10)
	if err != nil {
		t.Fatal(err)
	}
	<-w
	free, warming := state()
	if free != 0 || warming != nil {
		t.Fatalf("after the checkout: %d free slots, warming %v; want the prewarmed slot taken and no other made", free, warming)
	}
	tasks, err := os.ReadFile(filepath.Join(s.cg.dir, "tasks"))
	if err != nil || len(strings.Fields(string(tasks))) != 1 {
		t.Fatalf("the slot's cgroup holds %q (%v), want its one thread", tasks, err)
	}
	max, err := os.ReadFile(filepath.Join(s.cg.dir, "pids.max"))
	if err != nil || strings.TrimSpace(string(max)) != "11" {
		t.Fatalf("pids.max = %q (%v), want the run's limit plus the slot's thread", max, err)
	}
	s.checkin()
	again, err := pl.checkout(10)
	if err != nil || again != s {
		t.Fatalf("the next checkout got %p (%v), want the slot given back, %p", again, err, s)
	}
	pl.prewarm() // none free now: makes one
	if _, w = state(); w == nil {
		t.Fatal("prewarm with no free slot made none")
	}
	<-w
	again.checkin()
	pl.prewarm() // two free: nothing to do
	if free, warming = state(); free != 2 || warming != nil {
		t.Fatalf("%d free, warming %v; want 2 and none being made", free, warming)
	}
}

// A run's cgroup is never made inside another run's: the parent found from
// a thread that lives in a slot (the process's main thread may be one) is
// still the worker's own cgroup, whose limit is not a run's.
func TestPidsCgroupFoundFromASlot(t *testing.T) {
	pc := v1PidsCgroup(t)
	s, err := (&v1Pool{parent: *pc}).newSlot()
	if err != nil {
		t.Fatal(err)
	}
	var inSlot *pidsCgroup
	done := make(chan error, 1)
	s.jobs <- func() {
		var err error
		inSlot, err = findPidsCgroup()
		done <- err
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if inSlot.parent != pc.parent {
		t.Fatalf("from the slot's thread the parent is %s, want %s (the slot is %s)", inSlot.parent, pc.parent, s.cg.dir)
	}
}

// v1PidsCgroup is the cgroup v1 pids hierarchy a worker running as root
// makes its slots in; the test skips elsewhere (slots are only for that).
func v1PidsCgroup(t *testing.T) *pidsCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("pids cgroup slots are for a worker running as root")
	}
	pc, err := findPidsCgroup()
	if err != nil || pc.v2 {
		t.Skipf("needs a cgroup v1 pids hierarchy (found %+v, %v)", pc, err)
	}
	return pc
}
