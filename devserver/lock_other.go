//go:build !unix

package devserver

import "os"

// lockDB is a no-op where flock is unavailable: there, nothing stops two
// servers from sharing one DB file.
func lockDB(string) (*os.File, error) { return nil, nil }
