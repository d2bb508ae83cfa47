//go:build unix

package devserver

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDB takes an exclusive, non-blocking lock on path+".lock" for as long
// as the server runs. Two servers on one SQLite file would both own history
// shard 1 and fight over it (SQLite's own locking only serialises their
// writes), so the second one must not start. flock locks belong to the open
// file, so this also catches a second Start in the same process, and the
// kernel drops the lock if the process dies.
func lockDB(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("devserver: opening lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("devserver: %s is in use by another Temporal server (custos worker?): %w", path, ErrDBInUse)
		}
		return nil, fmt.Errorf("devserver: locking %s: %w", path, err)
	}
	return f, nil
}
