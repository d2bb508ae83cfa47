//go:build !unix

package devserver

import "io/fs"

// ownedByMe cannot check ownership where there are no Unix owners; the
// directory's ACLs (the user's profile) keep other users out there.
func ownedByMe(string, fs.FileInfo) error { return nil }
