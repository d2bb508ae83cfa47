package provision

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/custos-dev/custos/sandbox/hostfs"
	"github.com/custos-dev/custos/sandbox/sysview"
)

// Git inside the sandbox works as the user's git: their name
// and email reach it, as ~/.gitconfig, and nothing else of their git
// configuration — no credential helpers, includes, aliases, pager or hooks
// settings — and not the system's (GIT_CONFIG_NOSYSTEM).

// gitIdentity reads the user's git name and email, again only when one of
// their global git configuration files changed. With cache set, what it
// read is kept in that file too, for the next process (one that runs one
// command): trusted only when it is the user's own and no one else can
// write it, for the same files unchanged, and for an hour at most (a file
// those include may have changed).
type GitIdentity struct {
	Env   HostEnv
	Cache string

	mu          sync.Mutex
	key         string
	name, email string
}

// IdentityRecord is what gitIdentity.cache holds.
type IdentityRecord struct {
	Key   string    `json:"key"`
	Name  string    `json:"name"`
	Email string    `json:"email"`
	At    time.Time `json:"at"`
}

// identityCacheTTL is how long a kept identity serves.
const identityCacheTTL = time.Hour

// files are the global configuration files git reads, as it finds them.
func (g *GitIdentity) files() []string {
	if p := g.Env.getenv("GIT_CONFIG_GLOBAL"); p != "" {
		return []string{p}
	}
	return []string{filepath.Join(g.Env.home(), ".gitconfig"), filepath.Join(g.Env.xdg("XDG_CONFIG_HOME", ".config"), "git", "config")}
}

// Get returns the user's name and email ("" for what is not set).
func (g *GitIdentity) Get() (name, email string) {
	var key strings.Builder
	for _, f := range g.files() {
		if fi, err := os.Stat(f); err == nil {
			var ino uint64
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				ino = uint64(st.Ino) // a file replaced (an editor's rename) is another file
			}
			fmt.Fprintf(&key, "%s %d %d %d;", f, ino, fi.ModTime().UnixNano(), fi.Size())
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if key.String() == g.key && g.key != "" {
		return g.name, g.email
	}
	g.key = key.String()
	if r, ok := g.kept(g.key); ok {
		g.name, g.email = r.Name, r.Email
		return g.name, g.email
	}
	g.name, g.email = g.read()
	g.keep(IdentityRecord{Key: g.key, Name: g.name, Email: g.email, At: time.Now()})
	return g.name, g.email
}

// kept is the identity the cache file holds for key, if it may serve.
func (g *GitIdentity) kept(key string) (IdentityRecord, bool) {
	var r IdentityRecord
	ok := g.Cache != "" && key != "" && hostfs.ReadRecord(g.Cache, &r) && r.Key == key && hostfs.Recent(r.At, identityCacheTTL)
	return r, ok
}

// keep writes r to the cache file (best effort: without it the next
// process runs git).
func (g *GitIdentity) keep(r IdentityRecord) {
	if g.Cache != "" && r.Key != "" {
		hostfs.WriteRecord(g.Cache, r)
	}
}

// read asks git for the global user.name and user.email, in one run, with
// the user's home and configuration variables (includes are followed, as
// git follows them). Where a key is set more than once the last one
// counts, as for git config --get.
func (g *GitIdentity) read() (name, email string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "config", "--global", "--includes", "--null", "--get-regexp", `^user\.(name|email)$`)
	cmd.Dir = "/"
	env := []string{"HOME=" + g.Env.home(), "PATH=" + sysview.HostPath()}
	for _, k := range []string{"XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL"} {
		if v := g.Env.getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "", "" // exit 1: neither is set
	}
	// --null: each entry is KEY, a newline, VALUE, then NUL.
	for _, e := range strings.Split(string(out), "\x00") {
		k, v, _ := strings.Cut(e, "\n")
		switch k {
		case "user.name":
			name = strings.TrimSpace(v)
		case "user.email":
			email = strings.TrimSpace(v)
		}
	}
	return name, email
}

// gitconfigText is the ~/.gitconfig of the sandbox: the identity alone,
// quoted as git reads it. A value git could not read back as written (a
// control character) is left out.
func gitconfigText(name, email string) string {
	var b strings.Builder
	b.WriteString("# custos: the user's git identity; nothing else of their git configuration\n[user]\n")
	for _, kv := range [][2]string{{"name", name}, {"email", email}} {
		if v, ok := gitQuote(kv[1]); ok {
			fmt.Fprintf(&b, "\t%s = %s\n", kv[0], v)
		}
	}
	return b.String()
}

// gitQuote quotes a git configuration value.
func gitQuote(v string) (string, bool) {
	if v == "" {
		return "", false
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return "", false
		}
	}
	v = strings.ReplaceAll(v, `\`, `\\`)
	v = strings.ReplaceAll(v, `"`, `\"`)
	return `"` + v + `"`, true
}

// GitIdentity is what Describe reports of git.
func (g *GitIdentity) describe() string {
	name, email := g.Get()
	if name == "" && email == "" {
		return "git identity: none (the user has no user.name/user.email in their git configuration)"
	}
	return fmt.Sprintf("git identity: %s <%s> (from the user's git configuration; nothing else of it)", name, email)
}
