package hostguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Git config a command wrote, judged by the entries git itself reads from
// it: `git config --file F --no-includes --list --null` on a copy, so that
// no parser of ours can read a file differently from git (continuation
// lines, quoting, odd section syntax). An entry stays only when its key is
// known to be inert, the keys git init, clone, submodule, worktree and
// `git config user.*` write; everything else goes, whether or not it runs
// a program today (core.fsmonitor, core.pager, core.editor, core.hooksPath,
// core.sshCommand, diff/merge/filter drivers, credential helpers, aliases,
// sequence.editor, include and includeIf, url rewrites, protocol
// permissions ...): a key git adds next year is not let through by default.

// gitSafeSections are sections whose every key is inert.
var gitSafeSections = map[string]bool{
	"user": true, "author": true, "committer": true, "color": true, "advice": true,
	"extensions": true, "status": true, "init": true,
}

// gitSafeKeys are inert section.key names (lower case).
var gitSafeKeys = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true,
	"core.logallrefupdates": true, "core.ignorecase": true, "core.precomposeunicode": true,
	"core.symlinks": true, "core.autocrlf": true, "core.eol": true, "core.safecrlf": true,
	"core.quotepath": true, "core.worktree": true, "core.sharedrepository": true,
	"core.compression": true, "core.loosecompression": true, "core.bigfilethreshold": true,
	"core.untrackedcache": true, "core.splitindex": true, "core.abbrev": true,
	"core.checkstat": true, "core.trustctime": true, "core.preloadindex": true,
	"core.commentchar": true, "core.whitespace": true, "core.sparsecheckout": true,
	"core.sparsecheckoutcone": true, "core.multipackindex": true, "core.longpaths": true,
	"submodule.recurse": true, "submodule.active": true,
	"pull.rebase": true, "pull.ff": true, "push.default": true, "push.autosetupremote": true,
	"fetch.prune": true, "fetch.prunetags": true, "merge.ff": true, "merge.conflictstyle": true,
	"rebase.autostash": true, "rebase.autosquash": true, "rebase.updaterefs": true,
	"commit.gpgsign": true, "tag.gpgsign": true, "commit.verbose": true, "commit.cleanup": true,
	"diff.renames": true, "diff.algorithm": true, "diff.mnemonicprefix": true, "diff.colormoved": true,
	"receive.denycurrentbranch": true, "receive.denynonfastforwards": true, "receive.denydeletes": true,
	"lfs.repositoryformatversion": true, "gc.auto": true, "index.version": true,
}

// gitSafeSubKeys are inert keys of sections with subsections
// (section.<name>.key), by section.
var gitSafeSubKeys = map[string]map[string]bool{
	"remote": {"url": true, "pushurl": true, "fetch": true, "push": true, "mirror": true,
		"tagopt": true, "prune": true, "prunetags": true, "skipdefaultupdate": true,
		"skipfetchall": true, "promisor": true, "partialclonefilter": true},
	"branch": {"remote": true, "merge": true, "rebase": true, "pushremote": true, "description": true},
	// Not update: "!command" runs it on git submodule update.
	"submodule": {"url": true, "active": true, "branch": true, "fetchrecursesubmodules": true,
		"ignore": true, "shallow": true},
}

// gitKeyInert reports whether git never runs (nor is pointed at) a program
// because of key, as git --list spells it (section and key lower case,
// subsection as written).
func gitKeyInert(key string) bool {
	sec, rest, ok := strings.Cut(key, ".")
	if !ok {
		return false
	}
	sec = strings.ToLower(sec)
	if gitSafeSections[sec] {
		return true
	}
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		return gitSafeSubKeys[sec][strings.ToLower(rest[i+1:])]
	}
	return gitSafeKeys[sec+"."+strings.ToLower(rest)]
}

// gitEntry is one key = value of a config file; hasValue is false for a
// bare key ("[core]\n\tbare" means true).
type gitEntry struct {
	key, value string
	hasValue   bool
}

func (e gitEntry) String() string { return e.key }

// gitTool runs git the way custos reads a planted file: no system or
// global config, no repository around it, a deadline.
type gitTool struct{ path string }

func findHostGit() (gitTool, bool) {
	p, err := exec.LookPath("git")
	return gitTool{p}, err == nil
}

var errGitConfig = errors.New("git could not read the config")

func (g gitTool) run(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.path, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent",
		"GIT_CEILING_DIRECTORIES=/", "PATH=/usr/bin:/bin", "LC_ALL=C"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %s", errGitConfig, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// entries lists the entries of config file path, as git reads them.
func (g gitTool) entries(path string) ([]gitEntry, error) {
	out, err := g.run("config", "--file", path, "--no-includes", "--list", "--null")
	if err != nil {
		return nil, err
	}
	var es []gitEntry
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		k, v, has := strings.Cut(rec, "\n")
		es = append(es, gitEntry{key: k, value: v, hasValue: has})
	}
	return es, nil
}

// unset removes the entries of key with exactly value (all of key when it
// has none).
func (g gitTool) unset(path string, e gitEntry) error {
	args := []string{"config", "--file", path, "--unset-all", e.key}
	if e.hasValue {
		args = []string{"config", "--file", path, "--fixed-value", "--unset-all", e.key, e.value}
	}
	_, err := g.run(args...)
	return err
}

// activeEntries are the entries of data that are not inert and not among
// old's (a multiset: one old core.pager excuses one).
func (g gitTool) activeEntries(dir string, data, old []byte, hadOld bool) ([]gitEntry, error) {
	cur, err := g.parse(dir, "new", data)
	if err != nil {
		return nil, err
	}
	excused := map[gitEntry]int{}
	if hadOld {
		if prev, err := g.parse(dir, "old", old); err == nil {
			for _, e := range prev {
				excused[e]++
			}
		}
	}
	var out []gitEntry
	for _, e := range cur {
		if gitKeyInert(e.key) {
			continue
		}
		if excused[e] > 0 {
			excused[e]--
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// parse writes data to a file in dir and lists its entries.
func (g gitTool) parse(dir, name string, data []byte) ([]gitEntry, error) {
	f := filepath.Join(dir, name)
	if err := os.WriteFile(f, data, 0o600); err != nil {
		return nil, err
	}
	defer os.Remove(f)
	return g.entries(f)
}

// strip returns data without entries es. The caller reads the result
// again (activeEntries): a strip that did not take sets the file aside.
func (g gitTool) strip(dir string, data []byte, es []gitEntry) ([]byte, error) {
	f := filepath.Join(dir, "strip")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		return nil, err
	}
	defer os.Remove(f)
	for _, e := range es {
		if err := g.unset(f, e); err != nil {
			return nil, err
		}
	}
	return os.ReadFile(f)
}
