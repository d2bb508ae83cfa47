package activities

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/activities/toolkit"
	"github.com/custos-dev/custos/sandbox/gitdir"
)

// instructionNames are the file names read in each directory, the first
// one present winning: AGENTS.md, the name Codex and most agents read, or
// Claude Code's CLAUDE.md where a project has only that.
var instructionNames = []string{"AGENTS.md", "CLAUDE.md"}

// maxInstructionFile is the largest instruction file read at all; larger
// ones are refused rather than read to be cut.
const maxInstructionFile = 1 << 20

// instructionSource is one file found, before the cap is applied.
type instructionSource struct {
	show string // as the model and status name it
	data []byte
}

// loadInstructions reads the user's own instructions and the workspace's,
// root first and the working directory's last (the nearest one is read
// last, so it reads as the most specific). Workspace files go through the
// path guard as a Read would, so an AGENTS.md that is a symlink to a file
// outside the workspace, or one a Read deny rule covers, is skipped and
// said to be.
func loadInstructions(userConfigDir, ws, workDir string, readDeny []string) api.Instructions {
	var out api.Instructions
	var found []instructionSource
	if userConfigDir != "" {
		p := filepath.Join(userConfigDir, "custos", "AGENTS.md")
		data, err := readUserInstructions(p)
		switch {
		case err == nil:
			found = append(found, instructionSource{show: homeShown(p) + " (the user's own, for every project)", data: data})
		case !errors.Is(err, fs.ErrNotExist):
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s: %v", p, err))
		}
	}
	for _, dir := range dirsDownTo(workDir) {
		for _, name := range instructionNames {
			rel := name
			if dir != "" {
				rel = dir + "/" + name
			}
			data, err := readWorkspaceInstructions(ws, rel, readDeny)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				out.Skipped = append(out.Skipped, fmt.Sprintf("%s: %v", rel, err))
			} else {
				found = append(found, instructionSource{show: rel, data: data})
			}
			break // AGENTS.md there: CLAUDE.md is not read
		}
	}
	return capInstructions(out, found)
}

// homeShown names p with the home directory as ~.
func homeShown(p string) string {
	if home, err := os.UserHomeDir(); err == nil {
		if rel, err := filepath.Rel(home, p); err == nil && !strings.HasPrefix(rel, "..") {
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return p
}

// dirsDownTo lists "" (the root) and each directory down to workDir, a
// slash-separated path relative to the workspace. A workDir that leaves
// the workspace stops at the root.
func dirsDownTo(workDir string) []string {
	dirs := []string{""}
	clean := filepath.ToSlash(filepath.Clean("/" + workDir))[1:]
	if clean == "" {
		return dirs
	}
	parts := strings.Split(clean, "/")
	for i := range parts {
		dirs = append(dirs, strings.Join(parts[:i+1], "/"))
	}
	return dirs
}

func readUserInstructions(p string) ([]byte, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if fi.Size() > maxInstructionFile {
		return nil, fmt.Errorf("too large (%d bytes, limit %d)", fi.Size(), maxInstructionFile)
	}
	return os.ReadFile(p)
}

// readWorkspaceInstructions reads rel as the Read tool would: inside the
// workspace by its real name, a regular file, not covered by a deny rule.
func readWorkspaceInstructions(ws, rel string, readDeny []string) ([]byte, error) {
	if _, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(rel))); err != nil {
		return nil, err
	}
	tgt, err := toolkit.ResolveTarget(ws, rel, false)
	if err != nil {
		return nil, err
	}
	defer tgt.Close()
	if msg := toolkit.DeniedTarget("Read", tgt, readDeny, true); msg != "" {
		return nil, errors.New(msg)
	}
	data, _, err := toolkit.ReadRegular(tgt.Root, tgt.Rel, maxInstructionFile)
	return data, err
}

// capInstructions renders the files under their headings within
// api.MaxInstructionBytes; a file cut short says where and by how much.
func capInstructions(out api.Instructions, found []instructionSource) api.Instructions {
	var b strings.Builder
	budget := api.MaxInstructionBytes
	for _, f := range found {
		given := f.data
		if len(given) > budget {
			given = []byte(toolkit.CutUTF8(string(given), max(budget, 0)))
		}
		out.Files = append(out.Files, api.InstructionFile{Path: f.show, Bytes: len(f.data), Given: len(given)})
		fmt.Fprintf(&b, "\n## %s\n\n", f.show)
		b.Write(bytes.TrimRight(given, "\n"))
		b.WriteByte('\n')
		if len(given) < len(f.data) {
			fmt.Fprintf(&b, "[custos: cut here; the file has %d more bytes, over the %d-byte limit for all instructions. Read it for the rest.]\n",
				len(f.data)-len(given), api.MaxInstructionBytes)
		}
		budget -= len(given)
	}
	out.Text = strings.TrimPrefix(b.String(), "\n")
	return out
}

// hostFacts says what the model should know of the machine: the OS and
// whether the workspace is a git repository, on which branch.
func hostFacts(ws string) api.HostFacts {
	return api.HostFacts{OS: osName(), Git: gitBranch(ws)}
}

func osName() string {
	name := runtime.GOOS
	if f, err := os.Open("/etc/os-release"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				name = strings.Trim(v, `"'`)
				break
			}
		}
	}
	return fmt.Sprintf("%s (%s/%s)", name, runtime.GOOS, runtime.GOARCH)
}

// gitBranch finds the repository holding ws (a .git directory or file in
// ws or above it) and reads its HEAD: the branch, "detached HEAD", or ""
// when ws is in no repository. It reads files only; no git runs.
func gitBranch(ws string) string {
	for dir := ws; ; dir = filepath.Dir(dir) {
		gitDir := filepath.Join(dir, ".git")
		if fi, err := os.Stat(gitDir); err == nil {
			if !fi.IsDir() { // a worktree or submodule: "gitdir: PATH"
				p, ok := gitdir.ReadPointer(gitDir)
				if !ok {
					return "unknown branch"
				}
				gitDir = p
			}
			head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
			if err != nil {
				return "unknown branch"
			}
			if ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: refs/heads/"); ok {
				return ref
			}
			return "detached HEAD"
		}
		if dir == filepath.Dir(dir) {
			return ""
		}
	}
}
