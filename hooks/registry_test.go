package hooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decideWith(d string) func(Payload) Result {
	return func(Payload) Result { return Result{Decision: Decision(d), Reason: "because " + d} }
}

func names(hs []Handler) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.Name)
	}
	return out
}

func TestRegistryOrderAndMatching(t *testing.T) {
	r := NewRegistry()
	reg := []Handler{
		{Name: "user-b", Point: ToolApprovalPre, Priority: 5, Source: SourceUser, Decide: decideWith("")},
		{Name: "user-a", Point: ToolApprovalPre, Priority: 0, Source: SourceUser, Decide: decideWith("")},
		{Name: "sys-late", Point: ToolApprovalPre, Priority: -1, Source: SourceSystem, Decide: decideWith("")},
		{Name: "sys-early", Point: ToolApprovalPre, Priority: -100, Source: SourceSystem, Decide: decideWith("")},
		{Name: "user-c", Point: ToolApprovalPre, Priority: 5, Source: SourceUser, Decide: decideWith("")},
		{Name: "bash-only", Point: ToolApprovalPre, Priority: 1, Source: SourceUser, Matcher: "Bash", Decide: decideWith("")},
		{Name: "edits", Point: ToolApprovalPre, Priority: 1, Source: SourceUser, Matcher: "Edit|Write", Decide: decideWith("")},
		{Name: "star", Point: ToolApprovalPre, Priority: 2, Source: SourceUser, Matcher: "*", Observe: func(Payload) {}},
		{Name: "other-point", Point: ToolExecuteAfter, Priority: 0, Source: SourceUser, Observe: func(Payload) {}},
		{Name: "llm", Point: LLMRequestBefore, Priority: 0, Source: SourceUser, Matcher: "Bash", Observe: func(Payload) {}},
	}
	for _, h := range reg {
		require.NoError(t, r.Register(h), h.Name)
	}

	tests := []struct {
		point Point
		tool  string
		want  []string
	}{
		{ToolApprovalPre, "Bash", []string{"sys-early", "sys-late", "user-a", "bash-only", "star", "user-b", "user-c"}},
		{ToolApprovalPre, "Write", []string{"sys-early", "sys-late", "user-a", "edits", "star", "user-b", "user-c"}},
		// Anchored: "Edit|Write" must not reach NotebookEdit.
		{ToolApprovalPre, "NotebookEdit", []string{"sys-early", "sys-late", "user-a", "star", "user-b", "user-c"}},
		{ToolExecuteAfter, "Read", []string{"other-point"}},
		// Matchers mean nothing at points without a tool.
		{LLMRequestBefore, "", []string{"llm"}},
		{SessionSaveAfter, "", []string{}},
	}
	for _, tt := range tests {
		t.Run(string(tt.point)+"/"+tt.tool, func(t *testing.T) {
			got := r.Handlers(tt.point, tt.tool)
			assert.Equal(t, tt.want, names(got))
			// Same answer every time: workflow replay depends on it.
			for i := 0; i < 20; i++ {
				assert.Equal(t, tt.want, names(r.Handlers(tt.point, tt.tool)))
			}
		})
	}
}

func TestRegisterRejects(t *testing.T) {
	ok := func(Payload) Result { return Result{} }
	tests := []struct {
		name string
		h    Handler
		want string
	}{
		{"empty name", Handler{Point: ToolApprovalPre, Source: SourceUser, Decide: ok}, "empty name"},
		{"unknown point", Handler{Name: "x", Point: "tool.nope", Source: SourceUser, Decide: ok}, "unknown point"},
		{"system non-negative", Handler{Name: "x", Point: ToolApprovalPre, Source: SourceSystem, Priority: 0, Decide: ok}, "negative priority"},
		{"user negative", Handler{Name: "x", Point: ToolApprovalPre, Source: SourceUser, Priority: -1, Decide: ok}, "priority >= 0"},
		{"bad source", Handler{Name: "x", Point: ToolApprovalPre, Source: "plugin", Decide: ok}, "source must be"},
		{"no funcs", Handler{Name: "x", Point: ToolApprovalPre, Source: SourceUser}, "neither Decide nor Observe"},
		{"bad matcher", Handler{Name: "x", Point: ToolApprovalPre, Source: SourceUser, Matcher: "Bash(", Decide: ok}, "bad matcher"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewRegistry().Register(tt.h)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}

	t.Run("duplicate", func(t *testing.T) {
		r := NewRegistry()
		h := Handler{Name: "x", Point: ToolApprovalPre, Source: SourceUser, Decide: ok}
		require.NoError(t, r.Register(h))
		err := r.Register(h)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "already registered")
	})
}

func TestDispatch(t *testing.T) {
	var seen []string
	observer := func(name string) Handler {
		return Handler{Name: name, Observe: func(p Payload) { seen = append(seen, name+":"+p.Tool) }}
	}
	rewrite := "redacted"
	tests := []struct {
		name     string
		handlers []Handler
		want     Result
		decided  bool
		wantSeen []string
	}{
		{
			name:     "no handlers",
			handlers: nil,
			wantSeen: nil,
		},
		{
			name:     "only observers",
			handlers: []Handler{observer("o1"), observer("o2")},
			wantSeen: []string{"o1:Bash", "o2:Bash"},
		},
		{
			name: "first decision wins and stops the run",
			handlers: []Handler{
				observer("o1"),
				{Name: "silent", Decide: decideWith("")},
				{Name: "denier", Decide: decideWith("deny")},
				{Name: "allower", Decide: decideWith("allow")},
				observer("o2"),
			},
			want:     Result{Decision: "deny", Reason: "because deny", Hook: "denier"},
			decided:  true,
			wantSeen: []string{"o1:Bash"},
		},
		{
			name: "a modification alone is a decision",
			handlers: []Handler{
				{Name: "redactor", Decide: func(Payload) Result { return Result{ModifiedOutput: &rewrite} }},
				{Name: "allower", Decide: decideWith("allow")},
			},
			want:    Result{ModifiedOutput: &rewrite, Hook: "redactor"},
			decided: true,
		},
		{
			name: "observer and decider in one handler",
			handlers: []Handler{{
				Name:    "both",
				Observe: func(p Payload) { seen = append(seen, "both:"+p.Tool) },
				Decide:  decideWith("ask"),
			}},
			want:     Result{Decision: "ask", Reason: "because ask", Hook: "both"},
			decided:  true,
			wantSeen: []string{"both:Bash"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen = nil
			got, decided := Dispatch(tt.handlers, Payload{Point: ToolApprovalPre, Tool: "Bash"})
			assert.Equal(t, tt.decided, decided)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantSeen, seen)
		})
	}
}
