package provision

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/toolchains"
)

// Toolchains: the sandbox shows a command the workspace and the
// system, nothing of the user's home; so a project's build would find none
// of the dependencies the host already has and start every build cold. For
// each toolchain the workspace uses, the sandbox adds what that toolchain
// needs to build offline and warm: the host's dependency caches, read-only
// (hostcache.go), and build and download caches of the workspace's own
// (wscache.go). This file says which toolchains a workspace uses.

// Detected is a toolchain found in a workspace, with the file that says so
// (relative to the workspace).
type Detected struct {
	Tool   string `json:"tool"`
	Marker string `json:"marker"`
}

// skipDetect are directories whose projects are not the workspace's own:
// dependencies and tool state.
var skipDetect = map[string]bool{"node_modules": true, "vendor": true, "target": true, "build": true, "dist": true}

// maxDetectDirs bounds the directories below the root that detection
// looks into (in name order), so a root of thousands of directories does
// not cost every command thousands of look-ups.
const maxDetectDirs = 200

// DetectToolchains lists the toolchains of the workspace: a marker file at
// its root or one directory below (monorepos keep a service per directory;
// the first maxDetectDirs of them), leaving out hidden directories and
// dependency trees. only narrows the result (nil: every toolchain; an
// empty list: none). The order is the table's (toolchains.Table).
func DetectToolchains(ws string, only []string, onlySet bool) []Detected {
	return detectToolchains(ws, only, onlySet, nil)
}

// DetectToolchains is DetectToolchains with the workspace's listings
// (dirs, nil for none) as the host-config snapshot keeps them between
// commands: a directory unchanged since then costs an lstat. Each
// directory's marker files come from its listing: one read of a directory,
// where a look-up of each marker name was a dozen (a hundred and more a
// call for a root of ten directories without a project, on every
// command's start).
func detectToolchains(ws string, only []string, onlySet bool, dirs *hostfs.DirListings) []Detected {
	if onlySet && len(only) == 0 {
		return nil
	}
	if dirs == nil {
		dirs = hostfs.NewDirListings()
	}
	ents, err := dirs.List(".", ws)
	if err != nil {
		return nil
	}
	found := []markerSet{markersIn(ents)}
	names := []string{""}
	for _, e := range ents {
		n := e.Name
		if e.Typ.IsDir() && !strings.HasPrefix(n, ".") && !skipDetect[n] && len(names) <= maxDetectDirs {
			names = append(names, n)
			abs := filepath.Join(ws, n)
			if sub, ok := dirs.Cached(n, abs); ok {
				found = append(found, markersIn(sub))
			} else {
				found = append(found, markersOf(abs))
			}
		}
	}
	var out []Detected
	for _, m := range toolchains.Table {
		if onlySet && !slices.Contains(only, m.Name) {
			continue
		}
	find:
		for i, d := range names {
			for _, name := range m.Markers {
				if found[i][name] {
					out = append(out, Detected{Tool: m.Name, Marker: filepath.ToSlash(filepath.Join(d, name))})
					break find
				}
			}
		}
	}
	return out
}

// markerSet is which marker names a directory holds as regular files.
type markerSet map[string]bool

// isMarker: a marker of the toolchains' table.
var isMarker = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range toolchains.Table {
		for _, n := range t.Markers {
			m[n] = true
		}
	}
	return m
}()

// markersIn is the marker files among a listing's entries.
func markersIn(ents []hostfs.DirEnt) markerSet {
	var s markerSet
	for _, e := range ents {
		if isMarker[e.Name] && e.Typ.IsRegular() {
			if s == nil {
				s = markerSet{}
			}
			s[e.Name] = true
		}
	}
	return s
}

// maxMarkerListing bounds how much of a directory below the root is
// listed for markers: past it, the marker names are looked up one by one,
// which costs the same however large the directory.
const maxMarkerListing = 512

// markersOf is the marker files of the directory dir.
func markersOf(dir string) markerSet {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	ents, err := f.ReadDir(maxMarkerListing + 1)
	f.Close()
	if (err == nil || errors.Is(err, io.EOF)) && len(ents) <= maxMarkerListing {
		return markersIn(hostfs.DirEntsOf(ents))
	}
	s := markerSet{}
	for n := range isMarker {
		if fi, err := os.Lstat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
			s[n] = true
		}
	}
	return s
}

// hasTool reports whether tool is among the detected.
func hasTool(ds []Detected, tool string) bool {
	return slices.ContainsFunc(ds, func(d Detected) bool { return d.Tool == tool })
}

// goVersion is a Go release as go.mod and toolchain names write it
// ("1.26.8", "go1.27rc1"), comparable.
type goVersion struct {
	parts [3]int
	// pre orders pre-releases before the release: 0 beta, 1 rc, 2 release.
	pre, preN int
}

// parseGoVersion parses "1.27.3", "go1.27.3", "1.27", "1.27rc1"; ok is
// false for anything else.
func parseGoVersion(s string) (goVersion, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "go")
	v := goVersion{pre: 2}
	for _, p := range []struct {
		tag  string
		rank int
	}{{"rc", 1}, {"beta", 0}} {
		if i := strings.Index(s, p.tag); i > 0 {
			n, err := strconv.Atoi(s[i+len(p.tag):])
			if err != nil {
				return v, false
			}
			v.pre, v.preN, s = p.rank, n, s[:i]
			break
		}
	}
	f := strings.Split(s, ".")
	if len(f) < 2 || len(f) > 3 {
		return v, false
	}
	for i, x := range f {
		n, err := strconv.Atoi(x)
		if err != nil || n < 0 {
			return v, false
		}
		v.parts[i] = n
	}
	return v, true
}

// Less orders versions.
func (v goVersion) Less(w goVersion) bool {
	for i := range v.parts {
		if v.parts[i] != w.parts[i] {
			return v.parts[i] < w.parts[i]
		}
	}
	if v.pre != w.pre {
		return v.pre < w.pre
	}
	return v.preN < w.preN
}

// goModRequires is the Go release a workspace's go.mod (or go.work) asks
// for: the higher of its go and toolchain lines, as the go command reads
// them. ok is false when there is no such file or line.
func goModRequires(ws string) (goVersion, bool) {
	var best goVersion
	found := false
	for _, name := range []string{"go.work", "go.mod"} {
		f, err := os.Open(filepath.Join(ws, name))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) != 2 || (fields[0] != "go" && fields[0] != "toolchain") {
				continue
			}
			if v, ok := parseGoVersion(fields[1]); ok && (!found || best.Less(v)) {
				best, found = v, true
			}
		}
		f.Close()
		if found {
			return best, true
		}
	}
	return best, found
}
