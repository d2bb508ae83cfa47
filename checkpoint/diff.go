package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// diffMax bounds the contents Diff compares line by line.
const diffMax = 1 << 20

// Diff is c as people read it: a git-style diff for a text file, else a
// line that says what became of the path (created, removed, a link's
// target, a mode, a binary's sizes).
func (s Store) Diff(c Change) string {
	b, a := c.Before, c.After
	switch {
	case b.Kind == File && a.Kind == File && b.Sum == a.Sum:
		return fmt.Sprintf("mode %s: %s → %s\n", c.Path, modeText(b.Mode), modeText(a.Mode))
	case b.Kind == File || a.Kind == File:
		if b.Kind != File && b.Kind != Absent || a.Kind != File && a.Kind != Absent {
			return fmt.Sprintf("%s: %s → %s\n", c.Path, describe(b), describe(a))
		}
		return s.fileDiff(c)
	}
	return fmt.Sprintf("%s: %s → %s\n", c.Path, describe(b), describe(a))
}

// fileDiff diffs the two contents of c, at least one a file.
func (s Store) fileDiff(c Change) string {
	var before, after []byte
	var err error
	if c.Before.Kind == File {
		if before, err = s.content(c.Before); err != nil {
			return fmt.Sprintf("%s: %v\n", c.Path, err)
		}
	}
	if c.After.Kind == File {
		if after, err = s.content(c.After); err != nil {
			return fmt.Sprintf("%s: %v\n", c.Path, err)
		}
	}
	if bytes.IndexByte(before, 0) >= 0 || bytes.IndexByte(after, 0) >= 0 {
		return fmt.Sprintf("%s: binary, %s → %s\n", c.Path, describe(c.Before), describe(c.After))
	}
	from, to := "a/"+c.Path, "b/"+c.Path
	if c.Before.Kind == Absent {
		from = "/dev/null"
	}
	if c.After.Kind == Absent {
		to = "/dev/null"
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(string(before)), B: lines(string(after)), FromFile: from, ToFile: to, Context: 3,
	})
	if err != nil {
		return fmt.Sprintf("%s: %v\n", c.Path, err)
	}
	if c.Before.Kind == File && c.After.Kind == File && c.Before.Mode != c.After.Mode {
		text = fmt.Sprintf("mode %s: %s → %s\n", c.Path, modeText(c.Before.Mode), modeText(c.After.Mode)) + text
	}
	return text
}

// content is e's content, unless too large to diff or not recorded.
func (s Store) content(e Entry) ([]byte, error) {
	if e.Sum == "" {
		return nil, errors.New("its content was not readable when recorded")
	}
	if e.Size > diffMax {
		return nil, fmt.Errorf("%d bytes, too large to show", e.Size)
	}
	return s.Object(e.Sum)
}

// lines splits text into lines that keep their "\n"; a last line without
// one carries git's marker.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.SplitAfter(s, "\n")
	if last := ls[len(ls)-1]; last == "" {
		ls = ls[:len(ls)-1]
	} else {
		ls[len(ls)-1] = last + "\n\\ No newline at end of file\n"
	}
	return ls
}

// describe is an entry in a few words.
func describe(e Entry) string {
	switch e.Kind {
	case File:
		return fmt.Sprintf("file (%d bytes, %s)", e.Size, modeText(e.Mode))
	case Dir:
		return "directory"
	case Symlink:
		return "link to " + e.Target
	case Absent:
		return "nothing"
	}
	return e.Kind
}

func modeText(m uint32) string { return fileMode(m).String() }
