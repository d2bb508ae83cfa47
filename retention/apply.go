package retention

import (
	"fmt"
	"os"

	"github.com/custos-dev/custos/sandbox/hostfs"
)

// Result is what Apply removed.
type Result struct {
	Removed map[Kind]int   `json:"removed"`
	Freed   map[Kind]int64 `json:"freed"`
	// Skipped are entries left because they changed since the plan (a
	// job went on, a blob was reused) or a command holds the cache.
	Skipped []string `json:"skipped,omitempty"`
	Errors  []string `json:"errors,omitempty"`
}

// Bytes is what Apply freed in all.
func (r Result) Bytes() int64 {
	var n int64
	for _, b := range r.Freed {
		n += b
	}
	return n
}

// Apply removes what plan lists. A file that changed since it was
// planned stays: an ended job that `say` took up again writes to its
// transcript, a reused blob is touched by the model activity. A cache is
// removed by removeCache (under its lock, never while a command holds it;
// nil: caches stay); it reports false when it left the cache.
func Apply(plan Plan, removeCache func(dir string) (bool, error)) Result {
	r := Result{Removed: map[Kind]int{}, Freed: map[Kind]int64{}}
	for _, e := range plan.Remove {
		ok, err := remove(e, removeCache)
		switch {
		case err != nil:
			r.Errors = append(r.Errors, err.Error())
		case !ok:
			r.Skipped = append(r.Skipped, e.Path)
		default:
			r.Removed[e.Kind]++
			r.Freed[e.Kind] += e.Bytes
		}
	}
	return r
}

func remove(e Entry, removeCache func(string) (bool, error)) (bool, error) {
	switch e.Kind {
	case Caches:
		if removeCache == nil {
			return false, nil
		}
		ok, err := removeCache(e.Path)
		if err != nil {
			return false, fmt.Errorf("retention: removing cache %s: %w", e.Path, err)
		}
		return ok, nil
	case Checkpoints:
		return removeCheckpoints(e)
	case ServerHomes:
		return removeHome(e)
	case Quarantine:
		if err := hostfs.RemoveAllWritable(e.Path); err != nil {
			return false, fmt.Errorf("retention: removing %s: %w", e.Path, err)
		}
		return true, nil
	}
	fi, err := os.Lstat(e.Path)
	if err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Equal(e.ModTime) {
		return false, nil
	}
	if err := os.Remove(e.Path); err != nil {
		return false, fmt.Errorf("retention: removing %s: %w", e.Path, err)
	}
	return true, nil
}
