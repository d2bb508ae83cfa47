// Package mcpservers is custos' side of MCP: the servers a job may use
// (from the user's settings, a trusted workspace's, and a workspace's own
// .mcp.json once a person approved each entry), their sessions on the
// workspace's host (a stdio server inside the sandbox, an HTTP server
// through the egress proxy), their tools and the calls to them. What a
// server's entry holds (commands, secrets in env and headers) stays on the
// host: the workflow only ever sees tool names, descriptions, schemas and
// results.
package mcpservers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/custos-dev/custos/settingsfile"
)

// Where a server's entry comes from. Only SourceUser may mark a server
// trusted; SourceMCPJSON needs a person's approval of the entry as it is.
const (
	SourceUser      = "user settings"
	SourceWorkspace = "workspace settings"
	SourceMCPJSON   = ".mcp.json"
)

// Server is one server's entry.
type Server struct {
	Name    string            `json:"name"`
	Type    string            `json:"type"` // "stdio" or "http"
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Domains are what a stdio server may reach through the egress proxy
	// (none: no network at all).
	Domains []string `json:"domains,omitempty"`
	// Trusted lets layer 2 take the server's readOnlyHint at its word;
	// honoured from the user's own settings only.
	Trusted bool   `json:"trusted,omitempty"`
	Source  string `json:"source"`
	File    string `json:"file"`
	// Job is set on an editor's server (editor.go): the job's own.
	Job string `json:"job,omitempty"`
	// CallTimeout bounds one call of the server's tools ("callTimeout";
	// 0: DefaultCallTimeout). Not in the fingerprint: it changes nothing
	// a person approved.
	CallTimeout time.Duration `json:"callTimeout,omitempty"`
	// WriteWorkspace: a stdio server that writes the workspace, through
	// an overlay of its own whose writes each call's end judges, records
	// and applies as a Bash command's (pool.go's writes).
	WriteWorkspace bool `json:"writeWorkspace,omitempty"`
}

// entryJSON is the strict shape of one entry, as .mcp.json writes it.
type entryJSON struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Domains []string          `json:"domains"`
	Trusted bool              `json:"trusted"`
	// WriteWorkspace asks for the workspace writable, through the
	// overlay, the host-config check and the checkpoints (true or false).
	WriteWorkspace json.RawMessage `json:"writeWorkspace"`
	// CallTimeout: custos' own bound on one call, "90s", "5m".
	CallTimeout json.RawMessage `json:"callTimeout"`
	// Claude Code's keys custos has no use for.
	Cwd     json.RawMessage `json:"cwd"`
	Timeout json.RawMessage `json:"timeout"`
}

// ServerName is what a server may be called: it becomes part of tool names
// (mcp__SERVER__TOOL), which the model's API limits to these characters.
var ServerName = regexp.MustCompile(`^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$`)

// Fingerprint identifies an entry as a person approved it: any change to
// what runs or where it connects, secrets included, gives another.
func (s Server) Fingerprint() string {
	b, _ := json.Marshal(struct {
		Type, Command, URL string
		Args, Domains      []string
		Env, Headers       map[string]string
	}{s.Type, s.Command, s.URL, s.Args, s.Domains, s.Env, s.Headers})
	if s.WriteWorkspace {
		// Only then: an approval of an entry that does not ask holds.
		b = append(b, " writeWorkspace"...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// Config is the servers a workspace's job may see, and what was left out.
type Config struct {
	Servers []Server
	// Notes say what was dropped and why (a broken entry, an untrusted
	// workspace's servers, a .mcp.json entry nobody approved).
	Notes []string
}

// Load reads the servers of a workspace: mcpServers in the user's custos
// settings and, if the user trusts the workspace, in its .custos settings;
// and the workspace's .mcp.json, each entry offered (Pending) until a
// person approves it as it is. A later file's entry of the same name
// replaces an earlier one, except that nothing replaces the user's.
func Load(userConfigDir, stateDir, workspace string) (Config, []Server, error) {
	loaded, err := settingsfile.Load(userConfigDir, workspace)
	if err != nil {
		return Config{}, nil, fmt.Errorf("mcp servers: %w", err)
	}
	var cfg Config
	byName := map[string]int{}
	add := func(s Server) {
		if i, ok := byName[s.Name]; ok {
			if cfg.Servers[i].Source == SourceUser && s.Source != SourceUser {
				cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s: server %q is the user's; the workspace's entry of that name is ignored", s.File, s.Name))
				return
			}
			cfg.Servers[i] = s
			return
		}
		byName[s.Name] = len(cfg.Servers)
		cfg.Servers = append(cfg.Servers, s)
	}
	for i, f := range settingsfile.Files(userConfigDir, workspace) {
		src := SourceWorkspace
		if i == 0 && userConfigDir != "" {
			src = SourceUser
		}
		servers, notes, err := readFile(f, src)
		cfg.Notes = append(cfg.Notes, notes...)
		if err != nil {
			return Config{}, nil, err
		}
		if src == SourceWorkspace && len(servers) > 0 && !loaded.Trusted {
			cfg.Notes = append(cfg.Notes, fmt.Sprintf("%s: mcpServers ignored: the workspace is not trusted (servers run commands; add them to .mcp.json for a person to approve, or trust the workspace)", f))
			continue
		}
		for _, s := range servers {
			add(s)
		}
	}
	var pending []Server
	if workspace != "" {
		offered, notes, err := readFile(filepath.Join(workspace, ".mcp.json"), SourceMCPJSON)
		cfg.Notes = append(cfg.Notes, notes...)
		if err != nil {
			return Config{}, nil, err
		}
		approved, err := LoadApprovals(stateDir)
		if err != nil {
			return Config{}, nil, err
		}
		for _, s := range offered {
			if approved.Has(workspace, s) {
				add(s)
				continue
			}
			pending = append(pending, s)
			cfg.Notes = append(cfg.Notes, fmt.Sprintf(".mcp.json: server %q is offered, not started: approve it with `starter mcp approve %s`", s.Name, s.Name))
		}
	}
	return cfg, pending, nil
}

// readFile reads the mcpServers of one file (a missing file has none). A
// broken entry is left out with a note; only an unreadable file is an error.
func readFile(name, source string) ([]Server, []string, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("mcp servers: %w", err)
	}
	var top struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, []string{fmt.Sprintf("%s: not valid JSON, no MCP servers read from it: %v", name, err)}, nil
	}
	var out []Server
	var notes []string
	for _, n := range slices.Sorted(maps.Keys(top.MCPServers)) {
		s, err := parseEntry(n, top.MCPServers[n], source, name)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: server %q left out: %v", name, n, err))
			continue
		}
		out = append(out, s)
	}
	return out, notes, nil
}

// parseEntry checks one entry strictly: a typo must not quietly drop a
// domain limit or a header.
func parseEntry(name string, raw json.RawMessage, source, file string) (Server, error) {
	if !ServerName.MatchString(name) || len(name) > 32 {
		return Server{}, errors.New("a server's name is letters, digits, '-' and single '_', at most 32")
	}
	var e entryJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Server{}, fmt.Errorf("bad entry: %w", err)
	}
	s := Server{Name: name, Type: e.Type, Command: e.Command, Args: e.Args, Env: e.Env, URL: e.URL,
		Headers: e.Headers, Domains: e.Domains, Source: source, File: file}
	var err error
	if s.CallTimeout, err = parseCallTimeout(e.CallTimeout); err != nil {
		return Server{}, err
	}
	if s.Type == "" {
		s.Type = "stdio"
		if e.URL != "" {
			s.Type = "http"
		}
	}
	switch s.Type {
	case "stdio":
		if strings.TrimSpace(s.Command) == "" || s.URL != "" || len(s.Headers) > 0 {
			return Server{}, errors.New(`a stdio server has a "command" and no "url" or "headers"`)
		}
	case "http", "streamable-http":
		s.Type = "http"
		if s.URL == "" || s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			return Server{}, errors.New(`an http server has a "url" and no "command", "args" or "env"`)
		}
	default:
		return Server{}, fmt.Errorf("type %q is not served (stdio or http)", s.Type)
	}
	if s.WriteWorkspace, err = parseWriteWorkspace(e.WriteWorkspace, s.Type); err != nil {
		return Server{}, err
	}
	if e.Trusted {
		if source != SourceUser {
			return Server{}, errors.New(`"trusted" is honoured only in the user's own settings`)
		}
		s.Trusted = true
	}
	return s, nil
}

// parseWriteWorkspace reads an entry's "writeWorkspace": true or false,
// and true only for a stdio server (an HTTP server's writes are its own
// host's, which no overlay sees).
func parseWriteWorkspace(raw json.RawMessage, typ string) (bool, error) {
	if len(raw) == 0 {
		return false, nil
	}
	var on bool
	if err := json.Unmarshal(raw, &on); err != nil {
		return false, errors.New(`"writeWorkspace" is true or false`)
	}
	if on && typ != "stdio" {
		return false, errors.New(`"writeWorkspace" is for a stdio server: an HTTP server writes on its own host, not in the workspace`)
	}
	return on, nil
}

// Expand replaces ${VAR} and ${VAR:-default} in s from the worker's
// environment, as .mcp.json files write secrets; a variable that is not
// set, without a default, is an error (the server would start without its
// secret and fail in ways that are harder to read).
func Expand(s string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		inner := m[2 : len(m)-1]
		name, def, hasDef := strings.Cut(inner, ":-")
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		if hasDef {
			return def
		}
		missing = append(missing, name)
		return ""
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}

var envRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`)

// expanded is s with every value expanded (Expand). An editor's entry
// is taken as it is: the editor passed values, and ${VAR} in one must not
// hand its server the worker's environment.
func (s Server) expanded() (Server, error) {
	if s.Source == SourceEditor {
		return s, nil
	}
	var err error
	one := func(v string) string {
		out, e := Expand(v)
		err = errors.Join(err, e)
		return out
	}
	out := s
	out.Command, out.URL = one(s.Command), one(s.URL)
	out.Args = make([]string, len(s.Args))
	for i, a := range s.Args {
		out.Args[i] = one(a)
	}
	out.Env, out.Headers = map[string]string{}, map[string]string{}
	for k, v := range s.Env {
		out.Env[k] = one(v)
	}
	for k, v := range s.Headers {
		out.Headers[k] = one(v)
	}
	if err != nil {
		return Server{}, fmt.Errorf("server %q: %w", s.Name, err)
	}
	return out, nil
}
