package policyreplay

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/custos-dev/custos/approval"
)

// Who answered a call, for Stats.AnsweredBy.
const (
	ByPeople   = "people"
	ByRules    = "rules"
	ByReadOnly = "read-only"
	ByModes    = "modes"
	ByHooks    = "hooks"
	ByTimers   = "timers"
	ByCanceled = "canceled"
	// ByRefused are calls refused before the policy (unknown tools,
	// invalid arguments, cut answers).
	ByRefused = "refused"
)

var answerers = []string{ByPeople, ByRules, ByReadOnly, ByModes, ByHooks, ByTimers, ByCanceled, ByRefused}

// Stats is what `starter audit stats` prints.
type Stats struct {
	Jobs    int `json:"jobs"`
	Calls   int `json:"calls"`
	Prompts int `json:"prompts"`
	// PerJob and PerHour count prompts (calls a person was asked about,
	// answered or timed out); hours are UTC.
	PerJob     []JobPrompts  `json:"perJob"`
	PerHour    []HourPrompts `json:"perHour"`
	AnsweredBy []Share       `json:"answeredBy"`
	// Wait is how long calls people answered waited for them.
	Wait     WaitStats `json:"wait"`
	Timeouts int       `json:"timeouts"`
	// TopRules are the rules that decided most; UnusedRules the rules of
	// the workspaces' current settings that decided nothing in the record.
	TopRules    []RuleCount `json:"topRules"`
	UnusedRules []WsRule    `json:"unusedRules"`
	// AlwaysApproved are asks people approved every time (at least twice),
	// by the rule an Always would save: candidates for `policy suggest`.
	AlwaysApproved []AskCount `json:"alwaysApproved"`
}

// JobPrompts is one job's calls and prompts.
type JobPrompts struct {
	Job       string `json:"job"`
	Workspace string `json:"workspace"`
	Calls     int    `json:"calls"`
	Prompts   int    `json:"prompts"`
}

// HourPrompts is the prompts of one hour.
type HourPrompts struct {
	Hour    time.Time `json:"hour"`
	Prompts int       `json:"prompts"`
}

// Share is how many calls one kind of answerer decided.
type Share struct {
	By      string  `json:"by"`
	Count   int     `json:"count"`
	Percent float64 `json:"percent"`
}

// WaitStats are the waits for a person, in milliseconds.
type WaitStats struct {
	Answered int   `json:"answered"`
	MedianMs int64 `json:"medianMs"`
	P99Ms    int64 `json:"p99Ms"`
}

// RuleCount is how often a rule decided, and how.
type RuleCount struct {
	Rule   string `json:"rule"`
	System bool   `json:"system,omitempty"`
	Count  int    `json:"count"`
}

// WsRule is a rule of a workspace's settings.
type WsRule struct {
	Workspace string `json:"workspace"`
	List      string `json:"list"`
	Rule      string `json:"rule"`
}

// AskCount is a kind of ask people approved every time.
type AskCount struct {
	Rule      string   `json:"rule"`
	Count     int      `json:"count"`
	Approvers []string `json:"approvers"`
}

// maxTopRules bounds Stats.TopRules.
const maxTopRules = 10

// Summarise counts what the jobs' records say. current gives a
// workspace's current settings, for the rules that never matched.
func Summarise(jobs []Job, current func(ws string) (approval.Settings, error)) (*Stats, error) {
	st := &Stats{Jobs: len(jobs), PerJob: []JobPrompts{}, PerHour: []HourPrompts{}, AnsweredBy: []Share{}, TopRules: []RuleCount{},
		UnusedRules: []WsRule{}, AlwaysApproved: []AskCount{}}
	var s summer
	s.init()
	for _, j := range jobs {
		s.job(st, j)
	}
	s.finish(st)
	var err error
	if st.UnusedRules, err = unusedRules(jobs, s.used, current); err != nil {
		return nil, err
	}
	return st, nil
}

// summer gathers the counts while the records are read.
type summer struct {
	by      map[string]int
	hours   map[time.Time]int
	waits   []int64
	rules   map[string]*RuleCount
	used    map[string]map[string]bool // workspace, rule
	asks    map[string]*AskCount
	deniedK map[string]bool // ask kinds a person denied at least once
}

func (s *summer) init() {
	s.by, s.hours, s.rules = map[string]int{}, map[time.Time]int{}, map[string]*RuleCount{}
	s.used, s.asks, s.deniedK = map[string]map[string]bool{}, map[string]*AskCount{}, map[string]bool{}
}

func (s *summer) job(st *Stats, j Job) {
	jp := JobPrompts{Job: j.ID, Workspace: j.Workspace}
	env := approval.Env{Workspace: j.Workspace}
	for _, rec := range j.Records {
		if rec.Env != nil {
			env = *rec.Env
		}
		if !decided(rec) {
			continue
		}
		st.Calls++
		jp.Calls++
		who := answeredBy(rec)
		s.by[who]++
		if rec.Layer == approval.LayerHuman {
			st.Prompts++
			jp.Prompts++
			s.hours[rec.Time.UTC().Truncate(time.Hour)]++
		}
		switch who {
		case ByPeople:
			s.waits = append(s.waits, rec.WaitMillis)
			s.ask(rec, env)
		case ByTimers:
			st.Timeouts++
		}
		if rec.Rule != "" && rec.Layer != approval.LayerHuman {
			s.rule(j.Workspace, rec)
		}
	}
	st.PerJob = append(st.PerJob, jp)
}

// answeredBy names who decided a recorded call.
func answeredBy(rec approval.AuditRecord) string {
	switch rec.Layer {
	case approval.LayerHuman:
		switch rec.Approver {
		case "timeout":
			return ByTimers
		case "canceled":
			return ByCanceled
		}
		return ByPeople
	case approval.LayerReadOnly:
		return ByReadOnly
	case approval.LayerMode:
		return ByModes
	case approval.LayerHook:
		return ByHooks
	}
	if refusedBeforePolicy(rec) {
		return ByRefused
	}
	return ByRules
}

func (s *summer) rule(ws string, rec approval.AuditRecord) {
	rc := s.rules[rec.Rule]
	if rc == nil {
		rc = &RuleCount{Rule: rec.Rule, System: rec.System}
		s.rules[rec.Rule] = rc
	}
	rc.Count++
	if s.used[ws] == nil {
		s.used[ws] = map[string]bool{}
	}
	s.used[ws][rec.Rule] = true
	// An allow that took several rules names them all: "a, b".
	for _, part := range strings.Split(rec.Rule, ", ") {
		s.used[ws][part] = true
	}
}

// ask counts a person's answer by the rule an Always would save.
func (s *summer) ask(rec approval.AuditRecord, env approval.Env) {
	key := approval.SuggestRule(approval.Call{Tool: rec.Tool, Input: modelInput(rec)}, env)
	if rec.Decision != approval.Allow {
		s.deniedK[key] = true
		return
	}
	a := s.asks[key]
	if a == nil {
		a = &AskCount{Rule: key}
		s.asks[key] = a
	}
	a.Count++
	if rec.Approver != "" && !slices.Contains(a.Approvers, rec.Approver) {
		a.Approvers = append(a.Approvers, rec.Approver)
	}
}

func (s *summer) finish(st *Stats) {
	for _, by := range answerers {
		if n := s.by[by]; n > 0 {
			st.AnsweredBy = append(st.AnsweredBy, Share{By: by, Count: n, Percent: percent(n, st.Calls)})
		}
	}
	for h, n := range s.hours {
		st.PerHour = append(st.PerHour, HourPrompts{Hour: h, Prompts: n})
	}
	sort.Slice(st.PerHour, func(a, b int) bool { return st.PerHour[a].Hour.Before(st.PerHour[b].Hour) })
	st.Wait = waitStats(s.waits)
	for _, rc := range s.rules {
		st.TopRules = append(st.TopRules, *rc)
	}
	sort.Slice(st.TopRules, func(a, b int) bool {
		return cmp.Or(cmp.Compare(st.TopRules[b].Count, st.TopRules[a].Count), strings.Compare(st.TopRules[a].Rule, st.TopRules[b].Rule)) < 0
	})
	st.TopRules = st.TopRules[:min(len(st.TopRules), maxTopRules)]
	for k, a := range s.asks {
		if a.Count >= 2 && !s.deniedK[k] {
			slices.Sort(a.Approvers)
			st.AlwaysApproved = append(st.AlwaysApproved, *a)
		}
	}
	sort.Slice(st.AlwaysApproved, func(a, b int) bool {
		x, y := st.AlwaysApproved[a], st.AlwaysApproved[b]
		return cmp.Or(cmp.Compare(y.Count, x.Count), strings.Compare(x.Rule, y.Rule)) < 0
	})
}

func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(int(float64(n)*1000/float64(of)+0.5)) / 10
}

// waitStats are the median and the 99th percentile (nearest rank).
func waitStats(waits []int64) WaitStats {
	if len(waits) == 0 {
		return WaitStats{}
	}
	w := slices.Clone(waits)
	slices.Sort(w)
	rank := func(p float64) int64 {
		i := int(float64(len(w))*p+0.999999) - 1
		return w[max(0, min(i, len(w)-1))]
	}
	return WaitStats{Answered: len(w), MedianMs: rank(0.5), P99Ms: rank(0.99)}
}

// unusedRules are the rules of each workspace's current settings that no
// record names.
func unusedRules(jobs []Job, used map[string]map[string]bool, current func(string) (approval.Settings, error)) ([]WsRule, error) {
	out := []WsRule{}
	if current == nil {
		return out, nil
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		if seen[j.Workspace] {
			continue
		}
		seen[j.Workspace] = true
		s, err := current(j.Workspace)
		if err != nil {
			return nil, err
		}
		for _, l := range []struct {
			name  string
			rules []string
		}{{approval.ListDeny, s.Permissions.Deny}, {approval.ListAsk, s.Permissions.Ask}, {approval.ListAllow, s.Permissions.Allow}} {
			for _, r := range l.rules {
				if !used[j.Workspace][strings.TrimSpace(r)] {
					out = append(out, WsRule{Workspace: j.Workspace, List: l.name, Rule: r})
				}
			}
		}
	}
	return out, nil
}
