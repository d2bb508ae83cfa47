package hooks

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
)

// Handler sources.
const (
	SourceSystem = "system"
	SourceUser   = "user"
)

// Handler is an in-process hook. System handlers are Go funcs that run inside
// workflow code, so Decide and Observe must be deterministic: no I/O, no clock,
// no map iteration order.
type Handler struct {
	Name     string
	Point    Point
	Priority int    // lower runs first; system < 0 <= user
	Source   string // SourceSystem or SourceUser
	Matcher  string // tool name, "A|B", regexp, or "" / "*" for every tool
	Decide   func(Payload) Result
	Observe  func(Payload)
}

// Registry holds handlers in registration order. It is not safe for concurrent
// use; workflow code is single-threaded, and a registry is built once per job.
type Registry struct {
	entries []entry
}

type entry struct {
	h Handler
	m matcher
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds h. System handlers must have a negative priority and user
// handlers a non-negative one, so no user handler can ever run before (and
// pre-empt) a system handler.
func (r *Registry) Register(h Handler) error {
	if h.Name == "" {
		return errors.New("register hook: empty name")
	}
	if !h.Point.Valid() {
		return fmt.Errorf("register hook %q: unknown point %q", h.Name, h.Point)
	}
	switch h.Source {
	case SourceSystem:
		if h.Priority >= 0 {
			return fmt.Errorf("register hook %q: system handlers need a negative priority, got %d", h.Name, h.Priority)
		}
	case SourceUser:
		if h.Priority < 0 {
			return fmt.Errorf("register hook %q: user handlers need a priority >= 0, got %d", h.Name, h.Priority)
		}
	default:
		return fmt.Errorf("register hook %q: source must be %q or %q, got %q", h.Name, SourceSystem, SourceUser, h.Source)
	}
	if h.Decide == nil && h.Observe == nil {
		return fmt.Errorf("register hook %q: neither Decide nor Observe is set", h.Name)
	}
	for _, e := range r.entries {
		if e.h.Name == h.Name && e.h.Point == h.Point {
			return fmt.Errorf("register hook %q: already registered at %s", h.Name, h.Point)
		}
	}
	m, err := compileMatcher(h.Matcher)
	if err != nil {
		return fmt.Errorf("register hook %q: %w", h.Name, err)
	}
	r.entries = append(r.entries, entry{h: h, m: m})
	return nil
}

// Handlers returns the handlers for point p whose matcher accepts tool, sorted by
// priority; equal priorities keep registration order (stable sort), so the
// result is the same on every replay.
func (r *Registry) Handlers(p Point, tool string) []Handler {
	var out []Handler
	for _, e := range r.entries {
		if e.h.Point != p {
			continue
		}
		if p.HasTool() && !e.m.match(tool) {
			continue
		}
		out = append(out, e.h)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out
}

// Dispatch runs handlers in order. Observers are called as they come; the first
// handler whose Decide returns a non-empty Result ends the run, and that Result
// is returned with Hook set to the handler's name. Handlers after it are not
// called. The bool reports whether any handler decided.
func Dispatch(handlers []Handler, p Payload) (Result, bool) {
	for _, h := range handlers {
		if h.Observe != nil {
			h.Observe(p)
		}
		if h.Decide == nil {
			continue
		}
		if res := h.Decide(p); !res.Empty() {
			res.Hook = h.Name
			return res, true
		}
	}
	return Result{}, false
}

// Empty reports whether r carries no decision and no modification.
func (r Result) Empty() bool {
	return r.Decision == "" && len(r.ModifiedInput) == 0 && r.ModifiedOutput == nil
}

// matcher selects tools by name. Plain names match exactly; anything else is a
// regular expression anchored at both ends, so "Edit|Write" does not also match
// "NotebookEdit" (unanchored matching would make a guard's reach surprising).
type matcher struct {
	all   bool
	exact string
	re    *regexp.Regexp
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_\-]+$`)

func compileMatcher(s string) (matcher, error) {
	switch {
	case s == "" || s == "*":
		return matcher{all: true}, nil
	case plainName.MatchString(s):
		return matcher{exact: s}, nil
	}
	re, err := regexp.Compile(`^(?:` + s + `)$`)
	if err != nil {
		return matcher{}, fmt.Errorf("bad matcher %q: %w", s, err)
	}
	return matcher{re: re}, nil
}

func (m matcher) match(tool string) bool {
	switch {
	case m.all:
		return true
	case m.re != nil:
		return m.re.MatchString(tool)
	default:
		return m.exact == tool
	}
}
