package workflows

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/custos-dev/custos/activities/api"
	"github.com/custos-dev/custos/approval"
	"github.com/custos-dev/custos/hooks"
	"github.com/custos-dev/custos/workflows/calltext"
	"github.com/custos-dev/custos/workflows/details"
	"github.com/custos-dev/custos/workflows/lanes"
	"github.com/custos-dev/custos/workflows/mcpcalls"
	"github.com/custos-dev/custos/workflows/observe"
	"github.com/custos-dev/custos/workflows/preview"
)

// runCalls decides and runs the tool calls of one model answer. Each call is
// decided in its own coroutine, so approvals are independent; allowed calls
// run as soon as they are decided, except Bash, which runs one at a time in
// the order the model gave. Results come back in call order.
func (j *job) runCalls(ctx workflow.Context, calls []openai.ToolCall, ids []string) []string {
	j.phase = "deciding"
	j.granted.NewAnswer()
	results := make([]string, len(calls))
	wg := workflow.NewWaitGroup(ctx)
	var prevBash workflow.Future
	for i, tc := range calls {
		var mine workflow.Settable
		prev := prevBash
		if tc.Function.Name == api.BashActivity {
			var f workflow.Future
			f, mine = workflow.NewFuture(ctx)
			prevBash = f
		}
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			if mine != nil {
				// Settled however the call ends, so the next Bash is never stuck.
				defer mine.Set(nil, nil)
			}
			results[i] = j.handleCall(ctx, tc, ids[i], prev)
		})
	}
	wg.Wait(ctx)
	j.phase = "running"
	return results
}

// handleCall runs one call through the pipeline and, if allowed, the tool;
// id is the call's identity in the job (jobCallIDs).
func (j *job) handleCall(ctx workflow.Context, tc openai.ToolCall, id string, prevBash workflow.Future) string {
	tool := tc.Function.Name
	input := json.RawMessage(tc.Function.Arguments)
	switch {
	case len(strings.TrimSpace(tc.Function.Arguments)) == 0:
		input = json.RawMessage(`{}`)
	case !json.Valid(input):
		// Keep the model's text, as a JSON string, so the audit and history
		// can hold it; layer 1 denies any input that is not an object.
		b, _ := json.Marshal(tc.Function.Arguments)
		input = b
	}
	j.emit(ctx, Event{Kind: "call", CallID: id, Tool: tool, Text: api.Summarize(tool, input), Input: eventInput(input), InputBytes: len(input)})
	if out, refused := j.refusedCall(ctx, id, tool, input); refused {
		return out
	}

	rec := j.decide(ctx, id, tool, input)
	j.audit(ctx, rec)
	j.emit(ctx, Event{Kind: "decision", CallID: id, Tool: tool, Decision: rec.Decision, Layer: rec.Layer,
		By: rec.Approver, Text: calltext.Decision(rec)})
	if rec.Decision != approval.Allow {
		j.runHooks(ctx, hooks.ToolExecuteDenied, hooks.Payload{CallID: id, Tool: tool, Input: rec.Input,
			Decision: string(rec.Decision), Reason: rec.Reason})
		return calltext.Denial(rec, j.st.Mode, j.st.Env, rec.Approver == answerTimeout)
	}
	if prevBash != nil {
		_ = prevBash.Get(ctx, nil)
	}
	if ctx.Err() != nil {
		_, why := j.stopWords()
		b, _ := json.Marshal(map[string]any{"approved": true, "error": why + " before the call ran; it did not run"})
		return string(b)
	}
	j.runHooks(ctx, hooks.ToolExecuteBefore, hooks.Payload{CallID: id, Tool: tool, Input: rec.Input})
	j.markRunning(id, tool)
	res, err := j.runTool(ctx, id, tool, rec.Input)
	j.markDone(id)
	if ctx.Err() != nil {
		res, err = j.stoppedWhileRunning(tool, res, err)
	}
	if err != nil {
		j.runHooks(ctx, hooks.ToolExecuteError, hooks.Payload{CallID: id, Tool: tool, Input: rec.Input, Error: err.Error()})
		j.emit(ctx, Event{Kind: "result", CallID: id, Tool: tool, Text: "error: " + err.Error(), Failed: true})
		return "Error: " + err.Error()
	}
	if len(res.HostConfig) > 0 {
		// What the command left for the host's tools to run, and what custos did
		// with it, for whoever reads the audit.
		text := "custos neutralised what the command left for the host's tools to run:\n" + strings.Join(res.HostConfig, "\n")
		j.audit(ctx, approval.AuditRecord{Event: "host-config", CallID: id, Tool: tool, Reason: text})
		j.emit(ctx, Event{Kind: "host-config", CallID: id, Tool: tool, Text: text})
	}
	j.noteChange(tool, rec.Input, res.IsError)
	out := res.Output
	if res.IsError {
		if !strings.HasPrefix(out, "Error") {
			out = "Error: " + out
		}
		// The tool ran and failed on its input (missing file, non-zero exit…).
		j.runHooks(ctx, hooks.ToolExecuteError, hooks.Payload{CallID: id, Tool: tool, Input: rec.Input, Output: out, Error: calltext.FirstLine(out, 500)})
	} else {
		j.runHooks(ctx, hooks.ToolExecuteAfter, hooks.Payload{CallID: id, Tool: tool, Input: rec.Input, Output: out})
	}
	if r, ok := j.runHooks(ctx, hooks.ToolApprovalPost, hooks.Payload{CallID: id, Tool: tool, Input: rec.Input, Output: out}); ok && r.ModifiedOutput != nil {
		out = *r.ModifiedOutput
	}
	j.emitResult(ctx, resultEvent(id, tool, rec.Input, out, res))
	return out
}

// stoppedWhileRunning is what the model is told of a call that an
// interrupt (or the job's end or cancellation) stopped while it ran: who
// stopped it, and what became of it. A command killed by the cancellation
// comes back as a result (its output so far, exit 143); an MCP call that
// was answered all the same keeps its answer.
func (j *job) stoppedWhileRunning(tool string, res api.ToolResult, err error) (api.ToolResult, error) {
	_, why := j.stopWords()
	mt, isMCP := j.mcp.Get(tool)
	switch {
	case isMCP && err != nil:
		err = mcpcalls.Stopped(mt, why)
	case isMCP:
	case err != nil:
		err = fmt.Errorf("%s while it ran: the call was stopped before it finished (a command is killed with its process tree); its output is lost", why)
	default:
		res.IsError = true
		res.Output = fmt.Sprintf("Error: %s while it ran: the command was stopped before it finished and its process tree killed; its output until then:\n%s", why, res.Output)
	}
	return res, err
}

// decide is the approval pipeline for one call: layers 1-3 (pure), layer 4
// (hooks), layer 5 (a human, raced against a timer). Layer 6, the audit, is
// the caller's. The returned record names the deciding layer and carries the
// input the tool must run with.
func (j *job) decide(ctx workflow.Context, callID, tool string, input json.RawMessage) approval.AuditRecord {
	rec := approval.AuditRecord{JobID: j.id, CallID: callID, Tool: tool, Input: input, Mode: j.st.Mode, By: j.userCalls[callID]}
	if _, _, looks := approval.MCPTool(tool); looks && !j.mcp.Listed() && len(j.st.MCPServers) > 0 {
		// A call carried into this run (or a person's) before its first
		// model call: the tools are listed first.
		j.mcp.List(ctx, j.mcpHost())
	}
	mt, isMCP := j.mcp.Get(tool)
	if v, refused := j.notOffered(tool); refused {
		return verdictRecord(rec, v)
	}
	if (!api.KnownTool(tool) || !j.lspKnown(ctx, tool)) && !isMCP && !j.isTask(ctx, tool) {
		return verdictRecord(rec, approval.Verdict{Decision: approval.Deny, Layer: approval.LayerRules,
			Reason: fmt.Sprintf("unknown tool %q; the tools are %s%s", tool, toolList(), j.mcp.Named())})
	}
	check := func(in json.RawMessage, layer approval.Layer) (approval.Verdict, bool) {
		if isMCP {
			return refuseInvalidMCPArguments(ctx, mt, in, layer)
		}
		return refuseInvalidArguments(ctx, tool, in, layer)
	}
	if v, refused := check(input, approval.LayerRules); refused {
		return verdictRecord(rec, v)
	}
	// Layers 1-3; layer 4's hooks only if the rules left the call open.
	call, eval := approval.Call{Tool: tool, Input: input, MCPReadOnly: isMCP && j.mcp.ReadOnly(mt)}, j.recordedEvaluate(ctx)
	found := approval.Findings{Rules: eval(call, j.st.Mode)}
	if found.Rules.Open() {
		if r, ok := j.runHooks(ctx, hooks.ToolApprovalPre, hooks.Payload{CallID: callID, Tool: tool, Input: input}); ok {
			found.Hook = &r
		}
	}
	pre := approval.Decide(call, j.st.Mode, eval, found)
	rec.Hook, rec.HookDecision = pre.Hook, hookSaid(found.Hook)
	if pre.Modified {
		rec.Modified, rec.OriginalInput, rec.Input = true, input, pre.Input
		if pre.Verdict.Decision != approval.Deny {
			if v, refused := check(pre.Input, approval.LayerHook); refused {
				return verdictRecord(rec, v)
			}
		}
	}
	if isMCP {
		j.mcp.Ask(&pre, mt, rec.Input)
	}
	// A call the settings' approvals cover goes to people whatever the
	// layers before allowed; only a deny stops it sooner.
	quorum := j.quorumFor(ctx, rec)
	if len(quorum) > 0 && pre.Verdict.Decision != approval.Deny {
		before := pre.AskReason
		if !pre.NeedsHuman {
			before = ""
		}
		pre.NeedsHuman, pre.AskReason = true, quorumReason(quorum, before)
	}
	if !pre.NeedsHuman {
		return verdictRecord(rec, pre.Verdict)
	}
	if ctx.Err() != nil {
		_, why := j.stopWords()
		return verdictRecord(rec, approval.Verdict{Decision: approval.Deny, Layer: approval.LayerHuman, Reason: why})
	}
	// A grant stands in for one person: never for a call that needs
	// several (approvals' quorum).
	// Nor for an MCP tool that changed since the job first saw it: a
	// person looks at what it says now.
	if len(quorum) == 0 && (!isMCP || j.mcp.Changed(tool) == "") {
		if r, ok := j.byGrant(ctx, found, rec); ok {
			return r
		}
	}
	r := j.ask(ctx, rec, pre.AskReason, found, quorum)
	if isMCP && r.Decision == approval.Allow {
		j.mcp.AcceptChange(mt, j.st.MCPSeen)
	}
	return r
}

// toolList names the tools as a sentence does ("Read, Glob … and Bash").
func toolList() string {
	names := api.ToolNames()
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// lspToolVersion marks histories recorded since LSP became a tool: before,
// a call named LSP was an unknown tool, denied at layer 1, and a history
// that recorded such a denial must replay with it.
const lspToolVersion = "lsp-tool"

// lspKnown reports whether tool, if it is LSP, is a tool in this history.
// The version is asked only for an LSP call, so no other history changes.
func (j *job) lspKnown(ctx workflow.Context, tool string) bool {
	if tool != api.LSPActivity {
		return true
	}
	return workflow.GetVersion(ctx, lspToolVersion, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// recordedEvaluate is layers 1-3 with each verdict recorded in history (a
// side effect): the rule engine is pure, but a later release may judge a
// command differently, and a running job must replay with the verdicts it
// was given. Histories recorded before this evaluate directly.
func (j *job) recordedEvaluate(ctx workflow.Context) approval.Evaluator {
	if workflow.GetVersion(ctx, "recorded-policy", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return j.policy.Evaluate
	}
	return func(c approval.Call, m approval.Mode) approval.Verdict {
		var v approval.Verdict
		err := workflow.SideEffect(ctx, func(workflow.Context) any { return j.policy.Evaluate(c, m) }).Get(&v)
		if err != nil {
			// Only a broken payload converter gets here: fail closed.
			return approval.Verdict{Decision: approval.Deny, Layer: approval.LayerRules, Reason: "could not record the policy's verdict: " + err.Error()}
		}
		return v
	}
}

// ask is layer 5: the call waits for an answer (the decide Update or the
// approval signal), raced against a timer that denies. People see it in the
// status query, the Web UI's current details and the configured channels,
// with a preview of what it would do.
func (j *job) ask(ctx workflow.Context, rec approval.AuditRecord, reason string, found approval.Findings, quorum []QuorumState) approval.AuditRecord {
	p := &pendingCall{
		ask: PendingAsk{CallID: rec.CallID, Tool: rec.Tool, Summary: api.Summarize(rec.Tool, rec.Input),
			Input: rec.Input, Reason: reason, Rule: approval.SuggestRule(approval.Call{Tool: rec.Tool, Input: rec.Input}, j.st.Env)},
		// Buffered, so an answer is never blocked on a call that just timed out.
		ch:    workflow.NewBufferedChannel(ctx, 1),
		rules: found.Rules, hookAsked: hookAsked(found),
	}
	p.ask.Quorum = quorum
	if workflow.GetVersion(ctx, "approval-preview", workflow.DefaultVersion, 1) >= 1 {
		p.ask.Preview = preview.Of(ctx, j.onHost, api.ToolRequest{JobID: j.id, Workspace: j.in.Workspace, Blobs: j.blobs()},
			rec, reason, j.st.Env, j.st.Settings.Sandbox)
	}
	now := workflow.Now(ctx)
	timeout := j.askTimeout(found)
	p.ask.AskedAt, p.ask.Deadline = now, now.Add(timeout)
	j.pending[rec.CallID] = p
	j.order = calltext.InCallOrder(append(j.order, rec.CallID), j.st.PendingIDs)
	j.phase = "waiting"
	j.emit(ctx, Event{Kind: "ask", CallID: rec.CallID, Tool: rec.Tool, Text: p.ask.Summary})
	j.updateDetails(ctx)
	p.refs = j.notices().Pending(ctx, p.ask)
	j.tellParent(ctx, p.ask, "")
	stopEscalation := j.notices().Escalate(ctx, p.ask, timeout, func() bool { return p.result != nil || p.answer != nil })

	tctx, cancelTimer := workflow.WithCancel(ctx)
	timer := workflow.NewTimerWithOptions(tctx, timeout,
		workflow.TimerOptions{Summary: "approval deadline " + rec.CallID})
	var answer ApprovalDecision
	timedOut := false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(p.ch, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &answer) })
	sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
	sel.Select(ctx)
	cancelTimer()
	stopEscalation()

	delete(j.pending, rec.CallID)
	j.order = calltext.Remove(j.order, rec.CallID)
	rec.WaitMillis = workflow.Now(ctx).Sub(now).Milliseconds()
	if len(j.pending) == 0 {
		j.phase = "deciding"
	}
	if timedOut {
		// Nobody said no: the model must not read a timer as a refusal.
		word, reason := answerTimeout, fmt.Sprintf("nobody answered in time (no answer within %s); no person refused this call, the deadline denied it by default", timeout)
		if ctx.Err() != nil {
			word, reason = j.stopWords()
			reason += " while the call waited for approval"
		}
		rec.Approver = word
		rec = verdictRecord(rec, approval.Verdict{Decision: approval.Deny, Layer: approval.LayerHuman, Reason: reason})
		p.timeout = timeout
		j.closeCall(ctx, p, rec, word)
		return rec
	}
	return j.answered(ctx, p, rec, answer)
}

// answered is how a person's answer decides the call: allowed (with the
// grant it carries), denied, or either with a rule learned.
func (j *job) answered(ctx workflow.Context, p *pendingCall, rec approval.AuditRecord, answer ApprovalDecision) approval.AuditRecord {
	rec.Approver, rec.Channel = answer.By, answer.Channel
	v := approval.Verdict{Layer: approval.LayerHuman, Reason: answer.Reason}
	switch answer.Decision {
	case "allow":
		v.Decision = approval.Allow
		if answer.Grant != nil && j.granted.On {
			if g := j.granted.Give(ctx, j.grantHost(), p.ask, answer); g != nil {
				info := g.Info()
				rec.Grant, p.grant = &info, g
				j.grantWaiting(ctx, p, *g)
			}
		}
		if g := p.viaGrant; g != nil {
			info := g.Info()
			rec.Grant, v.Rule = &info, g.Rule
		}
	case "deny":
		v.Decision = approval.Deny
		v.Reason = cmp.Or(answer.Reason, "denied by "+cmp.Or(answer.By, "a person"))
	case "always", "never":
		list := "allow"
		v.Decision = approval.Allow
		if answer.Decision == "never" {
			list = "deny"
			v.Decision = approval.Deny
			v.Reason = cmp.Or(answer.Reason, "denied for good by "+cmp.Or(answer.By, "a person"))
		}
		rule := p.ask.Rule
		v.Rule = rule
		j.learn(ctx, list, rule, answer.By)
	}
	rec = verdictRecord(rec, v)
	j.closeCall(ctx, p, rec, answer.Decision)
	return rec
}

// closeCall records how a call left layer 5: for the Update that answered
// it, for late answers, for the Web UI and for the channels.
func (j *job) closeCall(ctx workflow.Context, p *pendingCall, rec approval.AuditRecord, answer string) {
	res := DecideResult{CallID: rec.CallID, Tool: rec.Tool, Summary: p.ask.Summary, Decision: rec.Decision,
		Answer: answer, Layer: rec.Layer, By: rec.Approver, Channel: rec.Channel, Reason: rec.Reason,
		At: workflow.Now(ctx), Timeout: p.timeout}
	if answer == "always" || answer == "never" {
		res.Rule = rec.Rule
	}
	res.Grant = p.grant
	p.result = &res
	j.closed[rec.CallID] = res
	if j.recent = append(j.recent, res); len(j.recent) > maxRecentInDetails {
		j.recent = j.recent[1:]
	}
	j.updateDetails(ctx)
	j.notices().Decided(ctx, p.refs, p.ask.Input, res)
	j.tellParent(ctx, p.ask, details.Closed(res, j.in.ApprovalTimeout))
}

// learn adds an Always/Never rule to the job at once and persists it to
// .custos/settings.local.json. A failed write is reported, not fatal: the
// rule still holds for this job.
func (j *job) learn(ctx workflow.Context, list, rule, by string) {
	p, err := j.policy.WithRule(list, rule)
	if err != nil {
		j.emit(ctx, Event{Kind: "error", Text: fmt.Sprintf("could not learn rule %s: %v", rule, err)})
		return
	}
	j.policy = p
	j.st.Learned = append(j.st.Learned, LearnedRule{List: list, Rule: rule})
	j.audit(ctx, approval.AuditRecord{JobID: j.id, Event: "rule-learned", Rule: rule, Decision: approval.Decision(list), Approver: by, Layer: approval.LayerHuman})
	j.emit(ctx, Event{Kind: "rule", Text: fmt.Sprintf("learned %s rule %s", list, rule)})
	actx := j.onHost(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             fmt.Sprintf("persist %s rule %s", list, rule),
	})
	err = workflow.ExecuteActivity(actx, api.PersistRuleActivity, api.PersistRuleRequest{
		Workspace: j.in.Workspace, List: list, Rule: rule}).Get(ctx, nil)
	if err != nil {
		j.emit(ctx, Event{Kind: "error", Text: fmt.Sprintf("could not save rule %s to settings.local.json: %v", rule, err)})
	}
}

// executeTool runs the tool's activity. Bash goes to its own task queue and is
// never retried: a command cut off by a crash comes back as interrupted.
func (j *job) executeTool(ctx workflow.Context, callID, tool string, input json.RawMessage) (api.ToolResult, error) {
	req := api.ToolRequest{JobID: j.id, CallID: callID, Workspace: j.in.Workspace, Input: input, Blobs: j.blobs(),
		Sandbox: j.st.Settings.Sandbox, MaxOutput: j.in.MaxOutput,
		Turn: j.st.Turn, Checkpoints: api.CheckpointDir(j.st.Files)}
	j.withSandboxRules(&req, tool)
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
		Summary:             calltext.UISummary(tool, input),
	}
	var res api.ToolResult
	var err error
	if tool == api.TaskTool {
		return j.runTask(ctx, callID, input)
	}
	if tool == api.BashActivity {
		opts.StartToCloseTimeout = api.BashTimeout(input) + time.Minute
		opts.HeartbeatTimeout = 20 * time.Second
		opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
		// An interrupt returns once the command is dead (its process tree
		// killed), not while it still runs.
		opts.WaitForCancellation = true
		res, err = lanes.RunBash(ctx, lanes.Host{State: func() *State { return j.st }, Wait: j.in.LaneWait,
			Workspace: j.in.Workspace, OnHost: j.onHost, Emit: j.emit}, opts, req)
	} else if mt, ok := j.mcp.Get(tool); ok {
		return j.mcp.Run(ctx, j.mcpHost(), opts, req, mt)
	} else {
		err = workflow.ExecuteActivity(j.onHost(ctx, opts), tool, req).Get(ctx, &res)
	}
	if err != nil {
		if tool == api.BashActivity {
			var te *temporal.TimeoutError
			if errors.As(err, &te) {
				return res, fmt.Errorf("interrupted: the worker running this command stopped (%s timeout); the command may have partially run", te.TimeoutType())
			}
		}
		return res, fmt.Errorf("%s failed: %w", tool, err)
	}
	return res, nil
}

// audit is layer 6: every decision and every notable event, numbered.
func (j *job) audit(ctx workflow.Context, r approval.AuditRecord) {
	j.st.AuditSeq++
	r.Seq = j.st.AuditSeq
	r.Time = workflow.Now(ctx)
	r.JobID = j.id
	j.st.Audit = append(j.st.Audit, r)
	observe.Record(ctx, r)
}

func verdictRecord(rec approval.AuditRecord, v approval.Verdict) approval.AuditRecord {
	rec.Decision = v.Decision
	rec.Layer = v.Layer
	rec.Reason = v.Reason
	rec.System = v.System
	if v.Rule != "" {
		rec.Rule = v.Rule
	}
	return rec
}
