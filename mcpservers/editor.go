package mcpservers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// An editor's servers: the MCP servers an editor passes in ACP's
// session/new (package acpagent) are the user's own, run as the settings'
// mcpServers are (in the sandbox, behind the six layers, tools named
// mcp__SERVER__TOOL), for that job only. Their entries hold secrets (env,
// headers), so they never travel in the job's history: starter acp writes
// them to a file of the job's in custos' state directory,
//
//	acp-mcp/<sha256 of the job ID>.json   (0600, in a 0700 directory)
//
// the worker's pool adds them to the workspace's servers for that job's
// listings and calls, and the job removes the file (and stops the
// servers) when it ends. A settings server of the same name wins: it is
// the entry a person reviewed (trusted, approved); the editor's is left
// out, said in the job's notes.

// SourceEditor is the Source of an entry an editor passed.
const SourceEditor = "editor (ACP session/new)"

// EditorDir is the directory of the jobs' editor entries in the state
// directory.
const EditorDir = "acp-mcp"

// EditorEntry is one server as an editor passes it: stdio (Command, Args,
// Env) or http (URL, Headers).
type EditorEntry struct {
	Name, Type   string
	Command      string
	Args         []string
	Env, Headers map[string]string
	URL          string
}

// EditorServer checks an editor's entry as a settings file's entries are
// checked (its name, its shape), for job.
func EditorServer(job string, e EditorEntry) (Server, error) {
	// The keys an editor can set, and only those (no domains, no trust).
	raw, err := json.Marshal(struct {
		Type    string            `json:"type,omitempty"`
		Command string            `json:"command,omitempty"`
		Args    []string          `json:"args,omitempty"`
		Env     map[string]string `json:"env,omitempty"`
		URL     string            `json:"url,omitempty"`
		Headers map[string]string `json:"headers,omitempty"`
	}{e.Type, e.Command, e.Args, e.Env, e.URL, e.Headers})
	if err != nil {
		return Server{}, err
	}
	s, err := parseEntry(e.Name, raw, SourceEditor, "the editor's session/new")
	if err != nil {
		return Server{}, err
	}
	s.Job = job
	return s, nil
}

// EditorFile is where job's editor entries are, in the state directory.
func EditorFile(state, job string) string {
	sum := sha256.Sum256([]byte(job))
	return filepath.Join(state, EditorDir, hex.EncodeToString(sum[:16])+".json")
}

type editorFile struct {
	Job     string   `json:"job"`
	Servers []Server `json:"servers"`
}

// WriteEditorServers writes job's editor entries (EditorServer's), owner
// only, replacing what was there.
func WriteEditorServers(state, job string, servers []Server) error {
	name := EditorFile(state, job)
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return fmt.Errorf("the editor's MCP servers: %w", err)
	}
	b, err := json.Marshal(editorFile{Job: job, Servers: servers})
	if err != nil {
		return fmt.Errorf("the editor's MCP servers: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return fmt.Errorf("the editor's MCP servers: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(b); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		return fmt.Errorf("the editor's MCP servers: %w", err)
	}
	return nil
}

// LoadEditorServers reads job's editor entries; found is false when the
// job has none on this host. Each is checked again as it is read: a file
// edited since holds nothing the editor could not have passed.
func LoadEditorServers(state, job string) (servers []Server, found bool, err error) {
	b, err := os.ReadFile(EditorFile(state, job))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("the editor's MCP servers: %w", err)
	}
	var f editorFile
	if err := json.Unmarshal(b, &f); err != nil || f.Job != job {
		return nil, false, fmt.Errorf("the editor's MCP servers: %s is not job %s's entries", EditorFile(state, job), job)
	}
	for _, s := range f.Servers {
		c, err := EditorServer(job, EditorEntry{Name: s.Name, Type: s.Type, Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL, Headers: s.Headers})
		if err != nil {
			return nil, false, fmt.Errorf("the editor's MCP server %q: %w", s.Name, err)
		}
		servers = append(servers, c)
	}
	return servers, true, nil
}

// RemoveEditorServers removes job's editor entries (none: nothing to do).
func RemoveEditorServers(state, job string) error {
	if err := os.Remove(EditorFile(state, job)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the editor's MCP servers: %w", err)
	}
	return nil
}

// withEditor is cfg with job's editor servers added (a copy: cfg may be
// the cache's); a name the settings already serve keeps the settings'
// entry, and the note says so.
func withEditor(cfg Config, editor []Server) Config {
	out := Config{Servers: slices.Clone(cfg.Servers), Notes: slices.Clone(cfg.Notes)}
	for _, s := range editor {
		if slices.ContainsFunc(cfg.Servers, func(o Server) bool { return o.Name == s.Name }) {
			out.Notes = append(out.Notes, fmt.Sprintf("the editor's MCP server %q is not used: the settings serve a server of that name (%s), which wins", s.Name, s.Source))
			continue
		}
		out.Servers = append(out.Servers, s)
	}
	return out
}

// loadFor is the servers of ws and, for a job an editor passed servers
// ("" for none), its own.
func (p *Pool) loadFor(ws, job string) (Config, error) {
	cfg, err := p.load(ws)
	if err != nil || job == "" {
		return cfg, err
	}
	state, err := p.stateDir()
	if err != nil {
		return Config{}, err
	}
	editor, _, err := LoadEditorServers(state, job)
	if err != nil {
		cfg = withEditor(cfg, nil)
		cfg.Notes = append(cfg.Notes, err.Error())
		return cfg, nil
	}
	return withEditor(cfg, editor), nil
}

// ForgetJob stops the servers job's editor passed and removes their
// entries: the job has ended.
func (p *Pool) ForgetJob(job string) error {
	mine := "editor." + jobHash(job) + "."
	p.mu.Lock()
	type one struct {
		ws, name string
		s        *session
	}
	var gone []one
	for id, s := range p.sessions {
		if ws, name, _ := strings.Cut(id, "\x00"); strings.HasPrefix(name, mine) {
			gone = append(gone, one{ws, name, s})
		}
	}
	p.mu.Unlock()
	for _, g := range gone {
		p.drop(g.ws, g.name, g.s)
	}
	state, err := p.stateDir()
	if err != nil {
		return err
	}
	return RemoveEditorServers(state, job)
}

// poolName is the server's name in the pool and for its home: a job's
// editor server is the job's own, never shared with another job's or a
// settings server of the same name.
func (s Server) poolName() string {
	if s.Job == "" {
		return s.Name
	}
	return "editor." + jobHash(s.Job) + "." + s.Name
}

func jobHash(job string) string {
	sum := sha256.Sum256([]byte(job))
	return hex.EncodeToString(sum[:6])
}
