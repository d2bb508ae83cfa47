// Package atomicfile replaces a file's content so that no reader ever sees
// half of it and a failure leaves the old content whole: settings files
// people edit by hand, the embedded server's certificates, the Temporal
// CLI's profile and the blobs a job's transcript refers to are all
// written this one way.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces name with data, mode perm. The data goes to a new file in
// name's directory (a rename is atomic only within one file system), which
// is given perm before anything is written to it, synced, closed and then
// renamed over name; on any failure it is removed and name is untouched.
// The directory must exist.
func Write(name string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return fmt.Errorf("creating a file beside %s: %w", name, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op after the rename
	if err := fill(tmp, data, perm); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("replacing %s: %w", name, err)
	}
	return nil
}

// fill gives f perm, writes data, syncs and closes it; it closes f
// whatever fails.
func fill(f *os.File, data []byte, perm fs.FileMode) error {
	// CreateTemp makes 0600 files; say what is wanted, whatever the umask did.
	err := f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
