//go:build unix

package devserver

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe refuses a file another user owns: whoever owns it could have
// replaced the certificates with ones they hold the keys of.
func ownedByMe(name string, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("devserver: cannot tell who owns %s", name)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("devserver: %s belongs to uid %d, not to this user (uid %d); remove it", name, st.Uid, os.Geteuid())
	}
	return nil
}
