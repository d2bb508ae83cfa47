package hostfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Within reports whether path lies in (or is) root, both absolute and
// clean, and returns path relative to root.
func Within(root, path string) (string, bool) {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return "", false
	}
	if r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return r, true
}

// OwnedByUser says why fi may not be trusted as the user's own, or "".
func OwnedByUser(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "has no owner information"
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Sprintf("is owned by uid %d, not by the worker's user (uid %d)", st.Uid, uid)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return "is writable by others"
	}
	return ""
}

// Inside reports whether p is dir or below it (both clean).
func Inside(dir, p string) bool {
	_, ok := Within(dir, p)
	return ok
}
