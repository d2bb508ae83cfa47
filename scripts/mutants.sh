#!/usr/bin/env bash
# mutants.sh: show that the test suite fails when the product breaks.
#
# Each mutant is a deliberate break of the product source (one security
# property), applied to a fresh copy of the working tree (never to the tree
# itself; no git stash). The tests that guard the property then run against
# the copy: a failing run kills the mutant, a passing run lets it survive.
# First the same tests run unmutated, so a kill is the mutant's doing.
#
# Prints killed/survived per mutant and a total; exits non-zero if any
# mutant survives or no longer applies (its source text changed: update the
# mutant). Needs what the tests need (bwrap, root for the sandbox denial
# controls). Not part of make test: it runs the sandbox and workflow tests
# once per mutant.
#
#   scripts/mutants.sh            all mutants
#   scripts/mutants.sh net timer  mutants whose name contains a word
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export GOTOOLCHAIN=go1.27.3 CI=1
work=$(mktemp -d "${TMPDIR:-/tmp}/custos-mutants.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The same path for every copy, so the build cache serves the packages a
# mutant does not touch.
tree=$work/tree
log=$work/log

# mutant NAME PACKAGES RUN FILE FROM TO [FILE FROM TO ...]: FROM must occur
# in FILE exactly once and becomes TO.
names=() pkgs=() runs=() edits=()
mutant() {
	names+=("$1") pkgs+=("$2") runs+=("$3")
	shift 3
	local e=""
	while [ $# -gt 0 ]; do
		e+="$1"$'\x1f'"$2"$'\x1f'"$3"$'\x1e'
		shift 3
	done
	edits+=("$e")
}

mutant "no network namespace (drop --unshare-net)" \
	"./sandbox/..." "TestBwrapDenies|TestBwrapNetworkAllowlist" \
	sandbox/profile.go '"--unshare-net",' ''

# Commands may then write .git/hooks (the file tools refuse anything under
# .git by another rule, so the Bash wall is what this breaks).
mutant "no .git/hooks protection in the sandbox" \
	"./sandbox/..." "TestBwrapDenies|Protected" \
	sandbox/protect/gitdirs.go 'p.readOnly(hooks, fi.Mode().Type(), protected.GitHooks)' '_ = fi' \
	sandbox/protect/gitdirs.go $'hooksPlaceholder:\n\t\tp.placeholder(hooks)' $'hooksPlaceholder:\n\t\t_ = hooks' \
	sandbox/protect/gitdirs.go $'errors.Is(err, fs.ErrNotExist) {\n\t\t\t\tp.placeholder(hooks)' $'errors.Is(err, fs.ErrNotExist) {\n\t\t\t\t_ = hooks'

# Git on the host would then run the fsmonitor, hooks and pointers a
# command plants in a repository it creates below the root: the upper
# layer applied as the command left it, without the check.
mutant "the post-command scan off (host config left as the command made it)" \
	"./sandbox/..." "HostConfig" \
	sandbox/hostguard/overlay.go $'if sus := g.suspects(upper); len(sus) > 0 {\n\t\tg.seeds = sus' $'if sus := g.suspects(upper); false && len(sus) > 0 {\n\t\tg.seeds = sus'

# Git on the host reads the files a repository's config includes as the
# config itself: a command that writes one (a core.fsmonitor, a hooksPath)
# would then plant what the host's next git status runs.
mutant "included config not followed by the check after a command" \
	"./sandbox/..." "HostConfigIncludes" \
	sandbox/hostguard/include.go $'\ts.configIncludes(gitdir.RepoConfigs(gd), from)' $'\t_ = gitdir.RepoConfigs'
mutant "included config left writable in the sandbox" \
	"./sandbox/..." "HostConfigIncludes|ProtectedPlanIncludes" \
	sandbox/protect/gitdirs.go '			p.readOnly(in.Real, fi.Mode().Type(), protected.GitConfig)' '			_ = fi'
mutant "an upper layer that writes only an included file applied without the check" \
	"./sandbox/..." "HostConfigIncludes" \
	sandbox/hostguard/overlay.go 'g.before.nearInclude(r, sub) || ' ''
mutant "Write and Edit may change what the repository's config includes" \
	"./sandbox/pathguard" "ResolvePathIncludes" \
	sandbox/pathguard/pathguard.go '		if gitdir.InRootIncludes(canonWS, canon) {' '		if false {'

# A repository a command makes where the walk does not go (deep in a
# package in node_modules) would then reach the host unjudged.
mutant "the upper layer's suspects not looked at where the walk does not go" \
	"./sandbox/..." "HostConfigIncludes" \
	sandbox/hostguard/overlay.go '		g.seeds = sus' '		g.seeds = nil'
mutant "without an overlay, node_modules walked by package only" \
	"./sandbox/..." "HostConfigIncludes" \
	sandbox/hostguard/snapshot.go '			case s.modules:' '			case false:'

# A command would then write to the workspace directly again: an editor or
# a prompt on the host could act on a repository it plants while it runs.
mutant "writes visible on the host while the command runs (no overlay)" \
	"./sandbox/..." "TestBwrapOverlay" \
	sandbox/bwrap.go 'if err == nil && b.overlay && (guarded || req.probeOverlay) {' 'if false {'

# The command's removals would then be lost when its upper layer is
# applied: a file it deleted comes back.
mutant "overlay merge: whiteouts dropped, not applied" \
	"./sandbox/..." "TestMergeUpper|TestBwrapOverlay" \
	sandbox/overlaymerge/merge_linux.go '			err = m.whiteout(up, ws, name)' '			err = unix.Unlinkat(up, name, 0)'

# A symbolic link the workspace holds (evil -> /etc) would then be entered
# when the upper layer has a directory of its name: written through.
mutant "overlay merge: workspace symlinks followed" \
	"./sandbox/..." "TestMergeUpper" \
	sandbox/overlaymerge/merge_linux.go 'mergeDirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC' 'mergeDirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC' \
	sandbox/overlaymerge/merge_linux.go 'if present && (wst.Mode&unix.S_IFMT != unix.S_IFDIR || m.opaque(d.fd)) {' 'if present && m.opaque(d.fd) {'

# A repository the command made would then be taken for one the
# workspace had, and applied without the check.
mutant "overlay: a new directory named like a repository's taken for a merged one" \
	"./sandbox/..." "HostConfigNeutralised" \
	sandbox/hostguard/overlay.go $'if err != nil || !fi.IsDir() {\n\t\treturn false\n\t}\n\treturn !overlayOpaque' $'if err != nil || !fi.IsDir() {\n\t\treturn true\n\t}\n\treturn !overlayOpaque'

# On the merged view every file shows the overlay's device: compared with
# it, a user's own hooks and config would all look made by the command,
# and be set aside.
mutant "the merged view's files compared by device and inode" \
	"./sandbox/..." "HostConfigPreexisting" \
	sandbox/hostguard/guard.go $'\tif g.view {\n\t\ta.Dev' $'\tif false {\n\t\ta.Dev'

# The workspace's own mounts are planned while bubblewrap starts (bwrap.go,
# run): a planning that failed (a symbolic link at a protected path) would
# then still hand the step a plan, without the protected paths, and the
# command would run.
mutant "the step's plan fed although the late planning failed" \
	"./sandbox/..." "TestBwrapProtectedSymlinkRefused" \
	sandbox/bwrap.go $'lateErr == nil {\n\t\t\tlateErr = files.feedPlan(p)' $'true {\n\t\t\t_ = files.feedPlan(p)'

# The system's mounts are kept between runs while inotify reports nothing
# in what they were read from: kept regardless, a run would show an /etc
# (or a root) the host no longer has.
mutant "the kept system mounts trusted whatever changed" \
	"./sandbox/..." "TestSysMountWatch" \
	sandbox/sysview/etcwatch.go 's.base != base || s.w.changed() || !linksUnchanged(s.kept.links)' 's.base != base'

# A listing too recent to trust across a command would then be reused by
# the host-config check after it, which would miss what the command made
# in that directory.
mutant "a listing too recent for the walk after the command reused there" \
	"./sandbox/..." "TestDirListingsReuse" \
	sandbox/hostfs/listing.go 'return &DirListings{m: c.next, next: map[string]dirListing{}}' 'return &DirListings{m: c.next, next: map[string]dirListing{}, fresh: c.fresh}'

# A plan cut short (its writer gone mid-way) would then pass for a whole
# plan with fewer mounts.
mutant "the mount step runs a plan without its end" \
	"./sandbox/..." "TestMountStepNeedsTheWholePlan" \
	sandbox/mountinit_cgo.go "if (n < 2 || plan[n - 1] != 0 || plan[n - 2] != 'Z' || (n > 2 && plan[n - 3] != 0))" 'if (n == 0 || plan[n - 1] != 0)'

# The mount step (sandbox/mountinit.go) makes the masks, drops the
# capabilities and loads the filter before the command runs.
mutant "mount step: deny-rule masks left out of the plan" \
	"./sandbox/..." "MountStep|TestBwrapMasksEnforce" \
	sandbox/mountinit.go '		err = errors.Join(err, rec(op, m.Path))' '		_ = op'

mutant "mount step: the command keeps the step's capabilities" \
	"./sandbox/..." "MountStep" \
	sandbox/mountinit_cgo.go $'\tcm_drop_caps();\n' $'\n'

mutant "mount step: no seccomp filter" \
	"./sandbox/..." "MountStep" \
	sandbox/mountinit_cgo.go '	if (secfd >= 0) cm_seccomp(secfd);' '	if (secfd >= 0) close(secfd);'

# No path from inside the sandbox to the host but the overlay.
# The step as PID 1 of the sandbox: without it, bubblewrap's init (in the
# namespace where the workspace is the host's) is /proc/1.
mutant "the sandbox's PID 1 is bubblewrap's own init again (step runs the command itself)" \
	"./sandbox/..." "TestSandboxProcHasNoDoor|TestSandboxProcEscapes" \
	sandbox/profile.go 'a = append(a, "--as-pid-1", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")' 'a = append(a, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")' \
	sandbox/mountinit_cgo.go '	cm_init(argv + 7, env);' '	cm_exec(argv + 7, env);'

mutant "the sandbox's init stays dumpable" \
	"./sandbox/..." "TestSandboxProcHasNoDoor|TestSandboxProcEscapes" \
	sandbox/mountinit_cgo.go 'if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) cm_fail' 'if (0) cm_fail'

mutant "descriptors the worker inherited reach the command" \
	"./sandbox/..." "TestSandboxProcHasNoDoor" \
	sandbox/mountinit_cgo.go '	cm_close_inherited();' ''

mutant "without the step, bubblewrap's init is PID 1 again" \
	"./sandbox/..." "TestSandboxProcHasNoDoor|TestBwrapArgs" \
	sandbox/profile.go $'\tif p.Pid1 != "" {\n\t\ta = append(a, "--as-pid-1", "--")' $'\tif false {\n\t\ta = append(a, "--as-pid-1", "--")'

# Nothing set-id leaves the sandbox: the filter refuses the modes, the
# merge clears what still comes.
mutant "seccomp: set-uid and set-gid modes allowed" \
	"./sandbox/..." "TestBwrapSetIDRefused" \
	sandbox/seccomp.go '	for _, c := range setIDModeArgs {' '	for _, c := range setIDModeArgs[:0] {'

mutant "overlay merge: set-id bits kept" \
	"./sandbox/..." "TestMergeUpper|TestMergeReportsWithheld" \
	sandbox/overlaymerge/merge_linux.go '	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&hostfs.SetIDBits == 0 {' '	if true {'

mutant "overlay merge: fifos applied" \
	"./sandbox/..." "TestMergeUpper|TestMergeReportsWithheld" \
	sandbox/overlaymerge/merge_linux.go $'\t\tif dtype == unix.DT_FIFO || dtype == unix.DT_SOCK {\n\t\t\terr = m.dropSpecial' $'\t\tif false {\n\t\t\terr = m.dropSpecial'

# Every protected name, whether it exists or not.
mutant "protected names only a home directory reads are left unheld in a project" \
	"./sandbox/..." "TestBwrapProtectedNamesWhetherOrNot|TestProtectedPlan" \
	sandbox/protect/plan.go $'\t\tfor _, n := range l {\n\t\t\tnames = append(names, n.Name)' $'\t\tfor _, n := range l {\n\t\t\tif n.Name == ".bashrc" || n.Name == ".gitconfig" || n.Name == ".claude.json" {\n\t\t\t\tcontinue\n\t\t\t}\n\t\t\tnames = append(names, n.Name)'

mutant "protected names made below the root applied" \
	"./sandbox/..." "TestBwrapProtectedNamesWhetherOrNot" \
	sandbox/hostguard/overlay.go '	g.withholdProtected(upper, res)' '	_ = g.withholdProtected'

# The policy's holes: one mutant per hole class. Each breaks one
# property in approval/ and is killed by the tests named (verified on a
# scratch copy of the tree with scripts/mutants.sh's own apply and run).

# export LD_PRELOAD=./x.so; cat README.md would then be covered by
# Bash(cat:*): what the line exported before a command is not judged.
mutant "the shell's state not judged (variables exported earlier)" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shellenv.go $'\tfor _, v := range a.exported {\n\t\tvisit(v)\n\t}' $'\tfor _, v := range a.exported {\n\t\t_ = v\n\t}'

# HOME=./h git status would then be covered by Bash(git status:*): a
# variable is judged by a deny-list again, not by the list of inert ones.
mutant "variables judged by what is known dangerous, not what is known inert" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shellstate.go $'\tcase !ok:\n' $'\tcase !ok:\n\t\tv.inert = !dangerous(name)\n'

# HOME=./h git status: HOME pointing into the workspace counted inert.
mutant "HOME and XDG_* taken as inert wherever they point" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shellstate.go 'return s == "/nonexistent" || s == "/var/empty" || s == "/dev/null" || a.systemDir(s)' 'return true'

# PATH=.:$PATH; ls would then run a planted ./ls under Bash(ls:*).
mutant "PATH entries not judged" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shellstate.go $'\t\t\tif ok, why := w.a.pathEntry(e); !ok {\n\t\t\t\treturn false, why\n\t\t\t}\n\t\t}\n\t}\n\treturn true, ""\n}\n\n// pathText' $'\t\t\tif ok, why := w.a.pathEntry(e); !ok && false {\n\t\t\t\treturn false, why\n\t\t\t}\n\t\t}\n\t}\n\treturn true, ""\n}\n\n// pathText'

# FOO=1; cat f: an upper-case name the environment may hold would then be
# taken for the shell's own variable, never exported.
mutant "assignments to inherited names taken as shell variables" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shellstate.go 'if export || a.allexport || possiblyInherited(v.name) || hasEnv(a.exported, v.name) {' 'if export || a.allexport || hasEnv(a.exported, v.name) {'

# set -a; pager=x; cat f: set -a no longer exports what follows.
mutant "set -a ignored" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shellenv.go $'\t\tif setsAllexport(rest) {\n\t\t\tw.a.allexport = true\n\t\t}' $'\t\tif setsAllexport(rest) {\n\t\t\t_ = rest\n\t\t}'

# env -- PATH=./:/bin ls, env -i ls, env -vu PATH ls.
mutant "env's assignments, -i and -u not judged" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shell.go $'\tcase name == "env":\n\t\tw.wrapperEnv(rest[:inner])' $'\tcase name == "env":'

# env -- X=1 curl x would then run "X=1" as the command: the deny rule for
# curl missed.
mutant "env -- NAME=value taken for the command" \
	"./approval" "TestShellStateIsJudged" \
	approval/programs/wrappers.go 'for wr.assigns && i < len(rest) && IsAssignment(Word{Text: rest[i].Text, Static: true}) {' 'for false && wr.assigns && i < len(rest) && IsAssignment(Word{Text: rest[i].Text, Static: true}) {'

# HOME=./h git status: the variables on the command itself not judged.
mutant "X=v cmd not judged" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shell.go 'w.cmdEnv = w.commandEnv(c.Assigns)' 'w.cmdEnv = nil'

# GIT_PAGER=x bash -c 'git log': the shell's commands would not see it.
mutant "variables given to a shell not passed to its script" \
	"./approval ./approval/shell" "TestShellStateReachesNestedScripts|TestShellStateIsJudged" \
	approval/shell/shellenv.go 'w.a.outer = append(w.a.outer, outer)' 'w.a.outer = append(w.a.outer, nil)'

# for i in 1 2; do cat f; export LD_PRELOAD=./x.so; done: cat runs again
# under it.
mutant "a loop body that exports walked once" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shell.go 'if w.a.envGen != gen {' 'if false && w.a.envGen != gen {'

# trap 'id' EXIT; ls: the action runs later and would not be judged.
mutant "trap actions not walked" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shellenv.go 'w.traps = append(w.traps, action.Text)' '_ = action'

# shopt -s expand_aliases; alias cat='rm -rf .'; cat f.
mutant "alias definitions not judged" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shellenv.go 'w.a.undecidable("alias makes a name run another command")' '_ = r'

# source ./env.sh; cat f: what a sourced file sets would not be judged.
mutant "a sourced file's state not judged" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shell.go 'w.setUnknownEnv(strings.TrimSpace(name + " " + argText(rest)))' '_ = rest'

# PS4='$(id)'; set -x; echo hi: PS4 runs for every traced builtin.
mutant "PS4's code not judged" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shellstate.go 'w.a.undecidable(name + " is expanded as a prompt' '_ = (name + " is expanded as a prompt'

# PAGER=x git log under Bash(git log), and the rule an Always answer learns.
mutant "an exact rule for the command covers the variables set before it" \
	"./approval" "TestShellStateIsJudged|TestSuggestRuleKeepsTheVariables" \
	approval/programrules.go 'case f.Env == programs.EnvNone && (exactText || exactRaw):' 'case exactText || exactRaw:' \
	approval/policy.go '!slices.ContainsFunc(a.Commands[0].Findings, func(f programs.Finding) bool { return f.Env == programs.EnvLine }) {' '!slices.ContainsFunc(a.Commands[0].Findings, func(f programs.Finding) bool { return false }) {'

# HOME=/home/user/project; cat ~/.env: ~ would still be the old home.
mutant "~ after HOME is assigned taken for the old home" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shell.go 'if a.homeChanged {' 'if false && a.homeChanged {'

# ./ls under Bash(ls:*): a planted file of the program's name.
mutant "a program named by a path matched by a rule by name" \
	"./approval" "TestShellStateIsJudged" \
	approval/policy.go 'if allow && !r.namesProgram(c) {' 'if false && allow && !r.namesProgram(c) {'

# ./timeout 5 ls: a planted file named like a wrapper looked through.
mutant "a wrapper named by a path looked through" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shell.go 'if _, foreign := w.programPath(args[0]); foreign {' 'if _, foreign := w.programPath(args[0]); false && foreign {'

# Bash(tar -t:*) would then cover tar -t -f x.tar -I ./x.sh.
mutant "tar -I unmarked" \
	"./approval" "TestProgramTable$|TestProgramsJudgedByWhatTheyDo" \
	approval/programs/programs_table.go '-I|--use-compress-program=:run' '-I|--use-compress-program='

# tar -tf .env, tar -czf out.tgz secrets: tar's modes would read nothing.
mutant "tar's archive and operands not judged by its mode" \
	"./approval" "TestProgramsJudgedByWhatTheyDo" \
	approval/programs/programs_build.go $'\tcase "-t", "-d", "--test-label", "-x":\n\t\tw.OptionAccess(AccessRead, f.archive, p.name, "-f", false)' $'\tcase "-t", "-d", "--test-label", "-x":' \
	approval/programs/programs_build.go 'w.Access(kind, a, "tar "+f.mode+" operand")' '_, _ = kind, a'

# tar tIf ./x.sh x.tar: an old-style first word would hide -I.
mutant "tar's old-style first word not read" \
	"./approval" "TestProgramTable$|TestOrdinaryUseStaysAllowed" \
	approval/programs/programs_build.go $'\trest = p.expandOldStyle(rest)\n\to := p.scanOptions(w, rest)' $'\to := p.scanOptions(w, rest)'

# Bash(make -n:*) would then cover make -n --eval='$(shell id)'.
mutant "make --eval unmarked" \
	"./approval" "TestProgramTable$|TestProgramsJudgedByWhatTheyDo" \
	approval/programs/programs_table.go '-E|--eval=:run' '-E|--eval='

# make -n CC=sh: a variable on the command line, expanded by the makefile.
mutant "make's command-line variables not judged" \
	"./approval" "TestProgramTable$|TestProgramsJudgedByWhatTheyDo" \
	approval/programs/programs_build.go 'ok && k != "" && !strings.Contains(k, "/") {' 'ok && k != "" && !strings.Contains(k, "/") && false {'

# date -f .env where date --file=.env is denied.
mutant "date -f unmarked" \
	"./approval" "TestProgramsJudgedByWhatTheyDo" \
	approval/programs/programs_table.go '-d|--date= --debug -f|--file=:read' '-d|--date= --debug -f|--file='

# date -uf .env, grep -rnf .env x: a cluster's last letter would not take
# the next word as its value.
mutant "a value after a cluster not read" \
	"./approval" "TestProgramsJudgedByWhatTheyDo" \
	approval/programs/programs.go 'case !hasV && opt.value == valRequired && i+1 < len(rest):' 'case false && !hasV && opt.value == valRequired && i+1 < len(rest):'

# echo RAN | xargs -eE touch echo hi: -e's attached value read as a flag,
# -E would take touch, and Bash(echo:*) or Bash(xargs:*) would cover the
# touch xargs runs.
mutant "xargs' attached-only values read as flags" \
	"./approval" "TestProgramsJudgedByWhatTheyDo|TestProgramHolesAgainstTheRealPrograms" \
	approval/programs/xargs.go $'\t\tcase o.value == valNone:\n\t\t\tf(wo)\n\t\t\tcontinue' $'\t\tcase o.value != valRequired:\n\t\t\tf(wo)\n\t\t\tcontinue'

# jq -nrf .env: -f in a cluster would no longer make the first operand
# jq's script, read.
mutant "jq -f's file not read" \
	"./approval" "TestProgramsJudgedByWhatTheyDo" \
	approval/programs/programs_special.go $'\tif !o.hasLeadOpt && len(ops) > 0 {' $'\tif len(ops) > 0 {'

# tar -tf x.tar asks under Bash(tar -t:*) again; a deny rule for tar -x
# misses tar -xzf.
mutant "clusters not split in the command's text" \
	"./approval" "TestOrdinaryUseStaysAllowed|TestRulesSeeThroughClusters" \
	approval/shell/shell.go 'if p := programs.Lookup(sc.Name); p != nil && p.Splits() {' 'if p := programs.Lookup(sc.Name); p != nil && p.Splits() && false {'

# python3 -m json.tool IN OUT would write OUT under the rule.
mutant "python -m json.tool's output unmarked" \
	"./approval" "TestProgramTable$|TestProgramsJudgedByWhatTheyDo" \
	approval/programs/programs_table.go $'operands: operandSpec{role: roleRead, secondOut: true},\n\t\tallow:    []string{"python -m json.tool f.json"' $'operands: operandSpec{role: roleRead},\n\t\tallow:    []string{"python -m json.tool f.json"'

# ls | xargs cat under Bash(xargs:*): the appended words are files read.
mutant "xargs decided for any program it runs" \
	"./approval" "TestProgramsJudgedByWhatTheyDo" \
	approval/shell/shellenv.go 'if len(words) == 0 || !words[0].Static || !xargsInertPrograms[path.Base(words[0].Text)] || w.isForeign(words[0]) {' 'if len(words) == 0 || !words[0].Static || path.Base(words[0].Text) == "" {'

# xargs -l rm would run "rm" as -l's value: rm unseen by deny rules.
mutant "xargs -e, -i, -l taken to consume the next word" \
	"./approval" "TestProgramsJudgedByWhatTheyDo|TestShellStateIsJudged" \
	approval/programs/wrappers.go '"xargs":       {valued: "adEILnPs",' '"xargs":       {valued: "aEeIiLlnPsd",'

# gofmt -l . under Bash(gofmt:*) would not say the rule covers everything.
mutant "the uncovered-program note dropped" \
	"./approval" "TestOrdinaryUseStaysAllowed" \
	approval/policy.go $'func unjudgedNote(what []string) string {\n\tif len(what) == 0 {' $'func unjudgedNote(what []string) string {\n\tif len(what) >= 0 {'

# flock -c 'curl x' /tmp/l: the deny rule for curl missed.
mutant "flock -c's command not walked" \
	"./approval" "TestShellStateIsJudged" \
	approval/shell/shell.go 'if name == "flock" && w.flockScript(args, wrappers) {' 'if false && name == "flock" && w.flockScript(args, wrappers) {'

# Regular expression rules indexed by their literal prefix would no longer
# be met (Bash(re:^net5\b) as a deny rule).
mutant "regexp rules indexed by prefix not consulted" \
	"./approval" "TestRegexpRules" \
	approval/policy.go 'try(s.bashByPrefix[line[:k]])' '_ = line[:k]'

mutant "approval timer allows instead of denying" \
	"./workflows" "Timeout|Timer|Deadline|Pipeline" \
	workflows/calls.go 'approval.Verdict{Decision: approval.Deny, Layer: approval.LayerHuman, Reason: reason}' \
	'approval.Verdict{Decision: approval.Allow, Layer: approval.LayerHuman, Reason: reason}'

mutant "rule engine ignores deny rules" \
	"./approval ./workflows" "." \
	approval/policy.go '{ListDeny, s.Permissions.Deny, &p.deny},' '{ListDeny, nil, &p.deny},'

mutant "a hook's rewrite is not judged by the rules again" \
	"./approval" "TestDecide" \
	approval/pipeline.go 'switch v2 := eval(Call{Tool: c.Tool, Input: hr.ModifiedInput}, m); v2.Decision {' \
	'switch v2 := (Verdict{Decision: Continue}); v2.Decision {'

mutant "a **/ in a path rule needs a directory again (policy and sandbox disagree)" \
	"./approval ./pathglob" "TestPathRules|TestMatch" \
	pathglob/pathglob.go 'const maxGlobstars = 4' 'const maxGlobstars = 0'

mutant "path guard follows symlinks (lexical paths only)" \
	"./sandbox ./activities" "Path|Resolve|Symlink|TestWrite|TestEdit|TestRead" \
	sandbox/pathguard/pathguard.go 'func canonicalize(base, rel string) (string, error) {' \
	$'func canonicalize(base, rel string) (string, error) {\n\tif true {\n\t\treturn filepath.Join(base, rel), nil\n\t}'

# A sandboxed command that swaps a checked directory for a link (to a
# Read-denied directory, to .git/hooks) between the guard's check and the
# file tool's open would then have the open follow it: the denied file
# read, the hook written.
mutant "the file tools' open follows links again (openat2 without RESOLVE_NO_SYMLINKS)" \
	"./sandbox/pathguard ./activities/toolkit" "TestRoot|SwappedAfterTheCheck|SwappedDuringTheWalk" \
	sandbox/pathguard/root_linux.go 'const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS' 'const resolveFlags = unix.RESOLVE_BENEATH'

# A workspace named through a link would then be taken as canonical: the
# paths the guard answers and the Root's name would not be the real ones.
mutant "the workspace's one open follows links (no RESOLVE_NO_SYMLINKS)" \
	"./sandbox/pathguard" "TestResolvePath" \
	sandbox/pathguard/root_linux.go 'Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}' 'Resolve: unix.RESOLVE_NO_MAGICLINKS}'

# The LSP tool would then show a result's line from a file a deny rule
# hides whenever no link is on its way.
mutant "LSP shows a result's file without the deny check (link-free names)" \
	"./activities" "TestLSP" \
	activities/lspview.go $'\tif hidden, err := v.hide.HidesFile(v.root, name); err != nil || hidden {\n\t\treturn f\n\t}\n\tif fi, err := v.root.Stat(rel); err == nil {' $'\tif false {\n\t\treturn f\n\t}\n\tif fi, err := v.root.Stat(rel); err == nil {'

mutant "the file tools' fallback walk follows links (no O_NOFOLLOW)" \
	"./sandbox/pathguard" "TestRoot" \
	sandbox/pathguard/root_linux.go 'const walkDirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC' 'const walkDirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC' \
	sandbox/pathguard/root_linux.go '	fd, err := unix.Openat(dir, last, flag|unix.O_NOFOLLOW, mode)' '	fd, err := unix.Openat(dir, last, flag, mode)'

# The same race on a job's checkpoint: a Write's, Edit's or command's
# record would then save the denied file's content as the old version of
# the checked one (for a rewind to put into an ordinary file), and a
# rewind would write through a link swapped in since its plan (.git/hooks).
mutant "the checkpoint reads the workspace by path (a swapped-in link followed)" \
	"./checkpoint ./activities" "SwappedForALink|SwappedLink" \
	checkpoint/record.go '	fi, err := root.Lstat(rel)' '	fi, err := os.Lstat(filepath.Join(root.Name(), rel))' \
	checkpoint/record.go '	f, err := root.Open(rel)' '	f, err := os.Open(filepath.Join(root.Name(), rel))'

mutant "a rewind writes by path (through a swapped-in link)" \
	"./checkpoint" "SwappedLink|PastALink|TestRewind" \
	checkpoint/rewind.go '	fi, err := root.Lstat(rel)' '	fi, err := os.Lstat(filepath.Join(root.Name(), rel))' \
	checkpoint/rewind.go '	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)' '	f, err := os.OpenFile(filepath.Join(root.Name(), tmp), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)' \
	checkpoint/rewind.go '	if err := root.Rename(tmp, rel); err != nil {' '	if err := os.Rename(filepath.Join(root.Name(), tmp), filepath.Join(root.Name(), rel)); err != nil {'

mutant "a record's git HEAD is whatever .git/HEAD leads to (a denied file's content)" \
	"./checkpoint" "TestRecordHeadIsOnlyAnObjectName" \
	checkpoint/git.go '	if h := gitHeadFiles(ws); isObjectName(h) {' '	if h := gitHeadFiles(ws); true || isObjectName(h) {'

# The file tools would then keep hiding by the rules of an earlier call:
# a Read deny rule added to the job leaves the file it names readable.
mutant "compiled deny rules kept by workspace alone (a rule added not seen)" \
	"./activities" "TestLSPDenyRuleAddedBetweenCallsHides" \
	activities/toolkit/masks.go 'for _, s := range append([]string{ws}, patterns...) {' 'for _, s := range []string{ws} {'

mutant "Write rewrites the file in place (not atomic)" \
	"./activities" "TestWriteAtomic" \
	activities/tools.go 'tmp := filepath.Join(dir, "."+filepath.Base(rel)+".custos-tmp-"+hex.EncodeToString(rnd[:]))' \
	'tmp, _ := rel, hex.EncodeToString(rnd[:])' \
	activities/tools.go 'root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)' \
	'root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)'

# A person would then be shown a command's ESC, CR and BEL raw: the
# terminal, Slack or a browser runs the escape sequence and hides what runs.
mutant "escapes passed raw (control characters shown as they are)" \
	"./display ./workflows ./notify/..." "Escape|Escaped|Shown|Input|Safe" \
	display/display.go $'case r < 0x20:\n\t\treturn "⟨" + c0[r] + "⟩", size' $'case r < 0x20:\n\t\treturn s[i : i+size], size'

# A call the tool would refuse (or run with another field's value) would
# then wait for a person, who approves what does not run.
mutant "arguments the tool refuses are asked about (no pre-approval check)" \
	"./workflows" "TestInvalidArguments" \
	workflows/arguments.go 'err := api.CheckArguments(tool, input)' 'err, _ := error(nil), api.CheckArguments'

# The tool would then run COMMAND's value after the policy judged command's.
mutant "tools take a field in another case or twice" \
	"./activities ./activities/toolkit" "TestToolsRefuseFieldAliases|TestCheckArgumentsAgrees|TestDecodeInput" \
	activities/toolkit/tools.go '		if _, dup := given[name]; dup {' '		if _, dup := given[name]; false && dup {' \
	activities/toolkit/tools.go '		if !names[name] {' '		if false && !names[name] {'

# An allow rule for the outer command would then cover code bash runs from
# arithmetic and array subscripts (echo $[ x='a[$(touch FLAG)]', x ]).
mutant "arithmetic and subscripts not searched" \
	"./approval" "Arith|DoubleQuoted" \
	approval/shell/shell.go $'\t\t\tw.arithNode(node)' $'\t\t\t_ = node'

# An allow rule for a read-only program would then cover its options that
# run programs or write (rg --pre, sed's e, git diff --output).
mutant "program table findings dropped (an option that runs, unmarked)" \
	"./approval" "TestProgramGrammarDecides|TestProgramTableAgainstTheRealPrograms" \
	approval/shell/findings.go '	c.Findings = append(c.Findings, f)' '	_ = c'

# Answers would then be matched by the model's call ID: an answer meant for
# an earlier call approves a later one the model gave the same ID.
mutant "answers matched by the model's call ID" \
	"./workflows" "TestReusedCallID" \
	workflows/agent.go 'if workflow.GetVersion(ctx, "job-unique-call-ids", workflow.DefaultVersion, 1) == workflow.DefaultVersion {' \
	'if true {'

# A command cut off by a worker crash would then leave what it planted:
# nobody finishes its guard.
mutant "an interrupted command's host config never checked" \
	"./sandbox/..." "TestHostConfigOfAnInterruptedCommand" \
	sandbox/hostguard/pending.go '		if alive(p.PID, p.Start) || (ws != "" && p.WS != ws) {' '		if true {'

# A person would then read "example.com" where the command names a
# look-alike domain.
mutant "look-alike letters shown as themselves" \
	"./display" "TestEscapeClasses" \
	display/display.go '	case hidden(r), lookAlike(r, latin):' '	case hidden(r):'

# Bash(go vet:*) would then cover go vet -vettool=/bin/sh.
mutant "go vet -vettool unmarked" \
	"./approval" "TestProgramTable$|TestProgramTableAgainstTheRealPrograms" \
	approval/programs/programs_table.go '{name: "go vet", singleDash: true, opts: "-vettool=:run ' '{name: "go vet", singleDash: true, opts: "-vettool= '

# Bash(git branch:*) would then cover git branch -u origin/main, which
# sets the current branch's upstream.
mutant "git branch -u unmarked" \
	"./approval" "TestProgramTable$|TestProgramTableAgainstTheRealPrograms" \
	approval/programs/programs_table.go '-u|--set-upstream-to=:changes' '-u|--set-upstream-to='

# ... and git branch NAME, which creates a branch.
mutant "git branch operands not judged" \
	"./approval" "TestProgramTable$|TestProgramTableAgainstTheRealPrograms" \
	approval/programs/programs_special.go '	if len(o.ops) == 0 || o.listing {' '	if true {'

# A run's pids cgroup would then be made inside another run's slot when
# the thread looking it up lives in one, and bound by that run's limit.
mutant "pids cgroup looked up without leaving a slot" \
	"./sandbox/..." "TestPidsCgroupFoundFromASlot" \
	sandbox/cgroup.go '	for strings.HasPrefix(path.Base(v1Path), slotPrefix) {' '	for false {'

# The model would then list custos' own transcripts back to itself.
mutant "Glob and Grep list custos' own files" \
	"./activities" "TestGlobGrepLeaveCustosOwnFilesOut" \
	activities/tools.go 'custosOwn[filepath.ToSlash(rel)]' 'false && custosOwn[filepath.ToSlash(rel)]'

# An AGENTS.md that is a symlink to ~/.ssh/id_rsa would then reach the model.
mutant "instructions read without the path guard" \
	"./activities" "TestLoadSettingsInstructionsStayInTheWorkspace" \
	activities/instructions.go $'\ttgt, err := resolveTarget(ws, rel, false)\n\tif err != nil {\n\t\treturn nil, err\n\t}' $'\ttgt, err := resolveTarget(ws, rel, false)\n\tif err != nil {\n\t\treturn os.ReadFile(filepath.Join(ws, rel))\n\t}'

# With the home directory as the workspace, a command could then read the
# client certificate in the state directory and answer its own approvals.
mutant "custos' own directories inside the workspace left open" \
	"./activities" "TestCustosOwnDirectoriesInsideTheWorkspace" \
	activities/settings.go '		Private: s.privateIn(ws, dir)}' '		Private: nil}'

# What a command left running in the background would then go on for a
# moment after Run returned, past the host-config check.
mutant "the sandbox's init not reaped after bwrap exits" \
	"./sandbox/..." "TestReapKillsTheInitThatOutlivedBwrap" \
	sandbox/bwrap.go $'func (w *statusWatch) reap() {\n' $'func (w *statusWatch) reap() {\n\treturn\n'

# A settings change that allows what a person denied would then pass a
# team's CI gate unseen.
mutant "replay: a past denial now allowed counted as unchanged" \
	"./policyreplay ./cli" "TestReplayFixtureAudit|TestPolicyReplayExitStatus" \
	policyreplay/replay.go '		return DenialAllowed' '		return ""'

# A hook's recorded answer would then stand for hooks the proposal changed.
mutant "replay: recorded hook answers kept when the hooks change" \
	"./policyreplay" "TestReplayHookOutcomes" \
	policyreplay/replay.go '!reachedHooks(rec) || !slices.Equal(proposed, hookCommands(jc.now, call.Tool))' '!reachedHooks(rec)'

# policy suggest would then propose a rule that allows what was denied.
mutant "suggest: a rule that covers a denial" \
	"./policyreplay" "TestSuggestNarrowestRules" \
	policyreplay/suggest.go '		case "denial":
			return s, fmt.Sprintf' '		case "denial-never":
			return s, fmt.Sprintf'

# ... or one a deny rule overrides for a call it covers.
mutant "suggest: a rule the current deny rules override" \
	"./policyreplay" "TestSuggestNarrowestRules" \
	policyreplay/suggest.go 'if fv := f.Evaluate(it.call, it.mode); fv.Decision != approval.Allow {' 'if fv := f.Evaluate(it.call, it.mode); false && fv.Decision != approval.Allow {'

# ... or one a system rule overrides for a recorded call it names.
mutant "suggest: a rule a system rule overrides" \
	"./policyreplay" "TestSuggestNarrowestRules" \
	policyreplay/suggest.go 'if v.Decision == approval.Deny && it.kind == "denial" && namedDespiteDeny(c.rule, it) {' 'if false {'

# ... or miss a denial spelled with quotes ('g'o) by reading the raw text.
mutant "suggest: a denial's program read from the raw command" \
	"./policyreplay" "TestSuggestNarrowestRules" \
	policyreplay/suggest.go '		names = append(names, sc.Name)' '		names = append(names, strings.Fields(in.Command)[0])'

# A grant would then answer a call a hook asked a person about.
mutant "grant: past a hook's ask" \
	"./workflows" "TestGrantNeverPassesAHookOrAMode" \
	workflows/grants.go 'if !j.grantsOn || approval.Grantable(found.Rules, hookAsked(found)) != nil {' 'if !j.grantsOn {'

# ... or a call that needs N of M approvals.
mutant "grant: answers a quorum" \
	"./workflows" "TestGrantNeverAnswersAQuorum" \
	workflows/calls.go '	if len(quorum) == 0 {
		if r, ok := j.byGrant' '	if true {
		if r, ok := j.byGrant'

# ... or a call its rule does not cover.
mutant "grant: covers any call" \
	"./workflows" "TestJobGrantAllowsCoveredCallsUntilItEnds" \
	workflows/grants.go '			if j.policy.GrantCovers(g.Rule, call, mode) == nil {' '			if _, _, _ = g, call, mode; true {'

# ... or outlive its end in another job of the workspace.
mutant "grant: a workspace grant past its end" \
	"./workflows" "TestWorkspaceGrantEndsOnTime" \
	workflows/grants.go '		if now.Before(i.Until) {
			j.wsGrants = append(j.wsGrants, grantOf(i))
		}' '		j.wsGrants = append(j.wsGrants, grantOf(i))'

# ... or be given with a rule that does not allow the call it answers.
mutant "grant: an uncovering rule accepted" \
	"./workflows" "TestInvalidGrantSpecsRefused" \
	workflows/grants.go '	if err := j.policy.GrantCovers(rule, p.call(), j.st.Mode); err != nil {' '	if err := j.policy.GrantCovers(rule, p.call(), j.st.Mode); false && err != nil {'

# A process would then skip the probe on another bubblewrap, executable or
# boot than the one that passed, or after the sandbox failed a run.
mutant "probe: an earlier result taken whatever it depended on" \
	"./sandbox/..." "TestProbeCache" \
	sandbox/probecache/probecache.go '	return hostfs.ReadRecord(path, &r) && r.Key == key && hostfs.Recent(r.At, TTL)' '	return hostfs.ReadRecord(path, &r) && hostfs.Recent(r.At, TTL)'
# A record one process leaves the next (a probe, the git identity) would
# then be taken from a file others may write.
mutant "a record its group may write trusted" \
	"./sandbox/..." "TestGitIdentityKept" \
	sandbox/hostfs/files.go 'OwnedByUser(fi) != "" || fi.Mode().Perm()&0o022 != 0' 'OwnedByUser(fi) != ""'
mutant "probe: kept after a failed run" \
	"./sandbox/..." "TestProbeCache" \
	sandbox/bwrap.go '		_ = os.Remove(b.cfg.ProbeCache)' '		_ = b.cfg.ProbeCache'

# A Write whose checkpoint the full state directory refused would reach the
# model as an error instead of waiting with the job for space.
mutant "a call custos cannot record not parked" \
	"./workflows" "TestFullStateDirParksTheCallsItCannotRecord" \
	workflows/disk.go '	if !isDiskFull(err) || ctx.Err() != nil ||' '	if true || ctx.Err() != nil ||'

# An MCP server would then write the workspace straight, past the overlay,
# the host-config check and the checkpoints; its home is the only place it
# may write.
mutant "an MCP server writes the workspace" \
	"./mcpservers" "TestServerWritesOnlyItsHome" \
	mcpservers/writes.go '		req.ReadOnlyWorkspace = true' '		req.ReadOnlyWorkspace = false'

# A server whose entry says writeWorkspace would then write the workspace
# straight, not through its overlay: what the host guard withholds (a
# protected name the workspace lacks) applied without the check.
mutant "a writing MCP server's writes applied without the check" \
	"./mcpservers" "TestWritingServer" \
	sandbox/bwrap.go '		p.Overlay, p.ServiceOverlay = req.ServiceOverlay, true' '		p.ServiceOverlay = true'

# Its writes would then be applied with no checkpoint of them: a rewind
# could not take them back, and one that cannot be recorded is applied.
mutant "a writing MCP server's writes not recorded" \
	"./mcpservers ./activities" "TestWritingServer" \
	mcpservers/writes.go '	rep := watch.Finish(wc.hook)' '	rep := watch.Finish(nil)'

# A writing server's planted git config would then reach the workspace as
# it wrote it: its overlay applied without the host-config check.
mutant "a writing MCP server's git config applied unchecked" \
	"./mcpservers" "TestWritingServerPlantedGitConfigIsNeutralised" \
	sandbox/hostguard/overlay.go $'if sus := g.suspects(upper); len(sus) > 0 {\n\t\tg.seeds = sus' $'if sus := g.suspects(upper); false && len(sus) > 0 {\n\t\tg.seeds = sus'

# A writing server would then go on reading the workspace as its overlay
# first saw it: a file replaced since (a Write, an editor's save) read old.
mutant "a writing MCP server's stale view of the workspace kept" \
	"./mcpservers" "TestWritingServerSeesTheWorkspaceAsItIsNow" \
	mcpservers/writes.go '	if err := p.retire(ws, srv, wc); err != nil {' '	if err := error(nil); err != nil {'

# A link a server left in its home would then stand where custos seeds
# npm's index and mounts the host cache's content.
mutant "a link in a server's home kept where its npm cache goes" \
	"./mcpservers" "TestServerWritesOnlyItsHome" \
	sandbox/provision/server.go '		if err == nil && fi.IsDir() {' '		if err == nil || fi != nil {'

# A revoked (or changed) .mcp.json approval would then go on starting and
# calling its server while the other files stay as they were: the
# approvals left out of the key of the cached entries.
mutant "an MCP approval's change unseen by the cache" \
	"./mcpservers" "TestLoadCacheSeesEveryChange" \
	mcpservers/loadcache.go 'files := append(settingsfile.Files(user, ws), filepath.Join(state, approvalsFile))' 'files := settingsfile.Files(user, ws)'

# A stopped MCP call (interrupted, ended, timed out) would then leave its
# server running whatever it was doing, and the next call on it.
mutant "a stopped MCP call's server kept" \
	"./mcpservers" "TestCallStoppedWhileTheServerAnswersNothing|TestCallTimeoutStopsACallThatNeverAnswers" \
	mcpservers/pool.go $'		p.drop(ws, srv.poolName(), s)\n\t\tif ctx.Err() != nil {' $'		_ = s\n\t\tif ctx.Err() != nil {'

# A stopped call's server would then be started afresh while the old copy
# still runs (one ignoring SIGTERM, in its kill grace): two processes
# writing the server's home at once.
mutant "a stopped MCP server's next copy started before its death" \
	"./mcpservers" "TestCallStoppedWhileTheServerAnswersNothing" \
	mcpservers/pool.go '	gone := p.dying[id]' '	gone := chan struct{}(nil)'

# permissions.disableBypassPermissionsMode would then be read and not
# enforced: bypass from run, mode, a signal or defaultMode.
mutant "bypass allowed under disableBypassPermissionsMode" \
	"./approval ./workflows ./acpagent" "TestDisableBypass" \
	approval/bypass.go 'if m == ModeBypass && s.Permissions.DisableBypass {' 'if m == ModeBypass && s.Permissions.DisableBypass && false {'

# An untrusted workspace's disableBypassPermissionsMode would be dropped
# with its other settings, though it only narrows.
mutant "an untrusted workspace's disableBypassPermissionsMode dropped" \
	"./approval ./workflows" "TestDisableBypass" \
	approval/trust.go $'\t\tDisableBypass: s.Permissions.DisableBypass},' $'\t\t},'

# copy_tree puts the working tree's tracked files (with uncommitted edits)
# at $tree.
copy_tree() {
	rm -rf "$tree" && mkdir -p "$tree" &&
		(cd "$root" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$tree"
}

# apply EDITS: perform one mutant's edits on $tree.
apply() {
	local rec file from to n
	while IFS= read -r -d $'\x1e' rec; do
		IFS=$'\x1f' read -r -d '' file from to <<<"$rec" || true
		to=${to%$'\n'}
		n=$(FROM="$from" perl -0ne '$n = () = /\Q$ENV{FROM}\E/g; print $n' "$tree/$file")
		if [ "$n" != 1 ]; then
			echo "    $file: the text to break occurs $n times, not once: update the mutant" >&2
			return 1
		fi
		FROM="$from" TO="$to" perl -0pi -e 's/\Q$ENV{FROM}\E/$ENV{TO}/' "$tree/$file" || return 1
	done <<<"$1"
}

# run_tests PKGS RUN: go test in $tree; output to $log.
run_tests() {
	# shellcheck disable=SC2086 # PKGS is a list
	(cd "$tree" && go test -count=1 -timeout 20m -run "$2" $1) >"$log" 2>&1
}

selected() {
	[ $# -eq 1 ] && return 0
	local name=$1 w
	shift
	for w in "$@"; do
		case "$name" in *"$w"*) return 0 ;; esac
	done
	return 1
}

killed=0 survived=0 broken=0 total=0
for i in "${!names[@]}"; do
	selected "${names[$i]}" "$@" || continue
	total=$((total + 1))
	echo "mutant: ${names[$i]}"
	echo "  tests: go test -run '${runs[$i]}' ${pkgs[$i]}"
	copy_tree || { echo "  cannot copy the tree" >&2; exit 2; }
	if ! run_tests "${pkgs[$i]}" "${runs[$i]}"; then
		echo "  BROKEN: the tests fail without the mutant:"; tail -20 "$log" | sed 's/^/    /'
		broken=$((broken + 1))
		continue
	fi
	if ! apply "${edits[$i]}"; then
		echo "  BROKEN: the mutant does not apply"
		broken=$((broken + 1))
		continue
	fi
	if run_tests "${pkgs[$i]}" "${runs[$i]}"; then
		echo "  SURVIVED: the tests pass with the product broken"
		survived=$((survived + 1))
	elif grep -qE '\[(build|setup) failed\]' "$log"; then
		echo "  BROKEN: the mutant does not compile:"; grep -vE '^(ok|FAIL|---|===)' "$log" | head -10 | sed 's/^/    /'
		broken=$((broken + 1))
	else
		echo "  killed by:"; grep -aE '^\s*--- FAIL' "$log" | head -8 | sed 's/^/    /'
		killed=$((killed + 1))
	fi
done
echo "mutants: $total, killed: $killed, survived: $survived, broken: $broken"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
