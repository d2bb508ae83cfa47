package masks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Run is a Plan made ready for one bubblewrap run: the mode-000
// sources exist and the placeholders of missing paths are in place. undo
// removes what it created.
type Run struct {
	Plan Plan
	Src  Sources
	Undo func()
}

// Prepare expands a request's Read and Edit deny rules for the
// workspace ws (real path) and creates what the mounts need: the placeholders, and the
// sources unless the mount step makes its own (withSources false). It must
// run before the profile is built, so that placeholders exist when the
// masks are mounted over them (even below a directory another part of the
// profile makes read-only).
func Prepare(ws string, readDeny, editDeny []string, withSources bool) (*Run, error) {
	plan, err := Expand(ws, readDeny, editDeny)
	if err != nil {
		return &Run{Undo: func() {}}, err
	}
	return prepare(plan, withSources)
}

// PrepareReadOnly is Prepare for a workspace shown read-only: only the
// Read deny rules' masks of paths that exist, since nothing can be created
// or edited there (and no placeholder is left in the workspace for as long
// as a server runs).
func PrepareReadOnly(ws string, readDeny []string, withSources bool) (*Run, error) {
	plan, err := Expand(ws, readDeny, nil)
	if err != nil {
		return &Run{Undo: func() {}}, err
	}
	plan.Masks = slices.DeleteFunc(plan.Masks, func(m Mask) bool { return m.Missing })
	return prepare(plan, withSources)
}

func prepare(plan Plan, withSources bool) (*Run, error) {
	r := &Run{Undo: func() {}}
	var err error
	if plan.Empty() {
		return r, nil
	}
	var undo []func()
	r.Undo = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if withSources {
		if r.Src, err = maskSources(&undo); err != nil {
			r.Undo()
			return r, err
		}
	}
	for _, m := range plan.Masks {
		if !m.Missing {
			continue
		}
		u, err := placeholder(m)
		if err != nil {
			r.Undo()
			return r, err
		}
		undo = append(undo, u)
	}
	r.Plan = plan
	return r, nil
}

// Sources creates the sources bubblewrap binds over masked paths, and
// registers their removal with undo.
func maskSources(undo *[]func()) (Sources, error) {
	src, err := os.MkdirTemp("", "custos-mask-")
	if err != nil {
		return Sources{}, fmt.Errorf("sandbox: mask sources: %w", err)
	}
	*undo = append(*undo, func() {
		_ = os.Chmod(filepath.Join(src, "dir"), 0o700)
		_ = os.Chmod(filepath.Join(src, "empty"), 0o700)
		_ = os.RemoveAll(src)
	})
	srcs := Sources{HideFile: filepath.Join(src, "file"), HideDir: filepath.Join(src, "dir"), Empty: filepath.Join(src, "empty")}
	err = errors.Join(os.WriteFile(srcs.HideFile, nil, 0o000), os.Mkdir(srcs.HideDir, 0o000), os.Mkdir(srcs.Empty, 0o555))
	if err == nil {
		// Modes are set past the umask (0o555 would keep it; 0o000 is exact).
		err = errors.Join(os.Chmod(srcs.HideFile, 0o000), os.Chmod(srcs.HideDir, 0o000), os.Chmod(srcs.Empty, 0o555))
	}
	if err != nil {
		return Sources{}, fmt.Errorf("sandbox: mask sources: %w", err)
	}
	return srcs, nil
}

// placeholder creates an empty directory where a denied path is missing
// (and the directories above it), and returns how to remove them again:
// only if still empty, since a host process (the Write tool) may have
// written there meanwhile.
func placeholder(m Mask) (func(), error) {
	var made []string
	for d := filepath.Dir(m.Path); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sandbox: placeholder for %s: %w", m.Path, err)
		}
		made = append(made, d)
	}
	slices.Reverse(made)
	for _, d := range made {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("sandbox: placeholder for %s: %w", m.Path, err)
		}
	}
	created := true
	err := os.Mkdir(m.Path, 0o700)
	if errors.Is(err, fs.ErrExist) {
		// Appeared since the expansion: an empty directory is mounted over
		// as planned; anything else is refused rather than guessed at.
		fi, lerr := os.Lstat(m.Path)
		if lerr != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: %s appeared while the sandbox was being prepared; retry", ErrMasks, m.Path)
		}
		created, err = false, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: placeholder for %s: %w", m.Path, err)
	}
	return func() {
		if created {
			removeIfEmpty(m.Path)
		}
		for i := len(made) - 1; i >= 0; i-- {
			removeIfEmpty(made[i])
		}
	}, nil
}

// removeIfEmpty removes an empty regular file or an empty directory.
func removeIfEmpty(p string) {
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	switch {
	case fi.Mode().IsRegular() && fi.Size() == 0:
		_ = os.Remove(p)
	case fi.IsDir():
		_ = os.Remove(p) // fails (and keeps it) unless empty
	}
}
