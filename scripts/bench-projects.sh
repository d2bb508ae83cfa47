#!/usr/bin/env bash
# bench-projects.sh: time real open-source projects' own test commands on the
# host and in sandboxes, side by side, offline, and print a Markdown table:
#
#   project | host warm | custos first | custos warm | srt | codex
#
#   host warm     the command in a copy of the project, after one warm-up run
#   custos first  `starter sandbox exec --workspace COPY -- CMD` on a fresh
#                 copy, after `starter sandbox cache --workspace COPY --clear`
#                 (a new copy and a cleared cache for every counted run)
#   custos warm   the same again on the last of those copies, as it was left
#   srt           `srt --settings FILE -- CMD` in its own copy: writes only to
#                 that copy, no network (allowedDomains []), after a warm-up
#   codex         `codex sandbox -P :workspace -C COPY -- CMD` in its own copy
#                 (the built-in workspace-write profile, network off), after a
#                 warm-up
#
# A job's Bash call does not start a process of custos' binary: the worker
# runs it. activities' BenchmarkProjectTests times that path, the Bash
# activity against the host, in turn, on the same projects:
#   CUSTOS_BENCH_PROJECTS="DIR..." go test ./activities -run '^$' \
#     -bench ProjectTests -benchtime 9x
#
# Each cell is the median wall time of BENCH_RUNS runs (date +%s%N around the
# whole command, sandbox start-up included) and whether every run exited 0; a
# failing cell shows the exit code and the first line of the error. Every
# run's output is kept under BENCH_WORK/logs. The projects themselves are
# never touched: every column works on its own copy (cp -a).
#
# usage: scripts/bench-projects.sh PROJECT_DIR...
#
# The test command is taken from what the project has (override one with
# BENCH_CMD_<dir name, non-alphanumerics as _>='CMD ARGS', split on spaces):
#   go.mod                    go test -count=1 ./...   (-count=1: run the tests
#                             every time rather than replay go test's cached
#                             result; the build cache still serves)
#   package.json              npm test
#   pyproject.toml, setup.py  /usr/bin/python3 -m unittest   (stdlib only)
#   Makefile                  make test
#
# Environment:
#   STARTER        custos' starter (default /tmp/custos-starter), built from
#                  this repo: go build -o /tmp/custos-starter ./starter
#   SRT            the srt command (default: srt on PATH)
#   CODEX          the codex command (default: codex on PATH); CODEX_HOME, if
#                  set, must not be under /tmp (codex refuses it)
#   BENCH_RUNS     counted runs per cell (default 3)
#   BENCH_TIMEOUT  seconds before one run is killed (default 120)
#   BENCH_WORK     where the copies and logs go (default: a new directory
#                  under /var/tmp); the copies are removed at the end
#
# This script downloads nothing and needs no network. Get everything first:
#   - the projects: clones of their public repositories, with their
#     dependencies fetched on the host beforehand: `go mod download` for a Go
#     module (the module cache then holds them), `npm ci` or `npm install`
#     for a Node package (node_modules sits in the project, so in every copy);
#     the Python and C projects need nothing beyond python3, cc and make.
#     The README's figures: github.com/stretchr/objx at v0.5.2 (needs testify),
#     github.com/jonschlinkert/is-number (mocha as a devDependency),
#     github.com/simplejson/simplejson, github.com/zserge/jsmn.
#   - the peers, outside this repo and never a dependency of custos, from the
#     npm registry with its ordinary client:
#       npm install --prefix /work/peers @anthropic-ai/sandbox-runtime @openai/codex
#     then SRT=/work/peers/node_modules/.bin/srt
#     CODEX=/work/peers/node_modules/.bin/codex. srt on Linux also needs
#     bubblewrap, socat and ripgrep (Debian packages); codex ships its own
#     Linux sandbox in its native binary.
#   - bubblewrap for custos' sandbox (the Debian package, as .ci/run installs).
#
# Example:
#   STARTER=/tmp/custos-starter SRT=/work/peers/node_modules/.bin/srt \
#   CODEX=/work/peers/node_modules/.bin/codex CODEX_HOME=/work/peers/codex-home \
#     scripts/bench-projects.sh /work/bench-projects/{objx,is-number,simplejson,jsmn}
set -euo pipefail
# Every column runs the Go toolchain the sandbox picks: the one on PATH,
# unless go.mod asks for a newer one (Go's own default). A GOTOOLCHAIN
# exported in the caller's shell would have the host and the peers switch
# to another toolchain, one more exec per go command, and compare another
# compiler with custos'.
export GOTOOLCHAIN=auto

if [ $# -eq 0 ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
fi

runs=${BENCH_RUNS:-3}
timeout_s=${BENCH_TIMEOUT:-120}
starter=${STARTER:-/tmp/custos-starter}
srt=${SRT:-$(command -v srt || true)}
codex=${CODEX:-$(command -v codex || true)}
work=${BENCH_WORK:-$(mktemp -d /var/tmp/bench-projects.XXXXXX)}
mkdir -p "$work/logs" "$work/copies"
logs=$work/logs
trap 'rm -rf "$work/copies"' EXIT

projects=()
for p in "$@"; do
  [ -d "$p" ] || { echo "bench-projects: not a directory: $p" >&2; exit 2; }
  projects+=("$(cd "$p" && pwd)")
done

# test_command DIR prints the project's test command.
test_command() {
  local dir=$1 name var
  name=$(basename "$dir")
  var=BENCH_CMD_${name//[^A-Za-z0-9]/_}
  if [ -n "${!var:-}" ]; then
    echo "${!var}"
  elif [ -f "$dir/go.mod" ]; then
    echo "go test -count=1 ./..."
  elif [ -f "$dir/package.json" ]; then
    echo "npm test"
  elif [ -f "$dir/pyproject.toml" ] || [ -f "$dir/setup.py" ]; then
    echo "/usr/bin/python3 -m unittest"
  elif [ -f "$dir/Makefile" ] || [ -f "$dir/makefile" ] || [ -f "$dir/GNUmakefile" ]; then
    echo "make test"
  else
    echo "bench-projects: no test command known for $dir (set $var)" >&2
    return 1
  fi
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# fresh_copy SRC DST: DST becomes a new copy of SRC.
fresh_copy() {
  rm -rf "$2"
  mkdir -p "$(dirname "$2")"
  cp -a "$1" "$2"
}

# timed LOG CMD...: run CMD once (stdin closed), output to LOG; sets
# last_ms and last_rc.
timed() {
  local log=$1 t0 t1
  shift
  t0=$(now_ms)
  set +e
  timeout --kill-after=5 "$timeout_s" "$@" </dev/null >"$log" 2>&1
  last_rc=$?
  set -e
  t1=$(now_ms)
  last_ms=$((t1 - t0))
}

# first_error LOG: the first line that reads like an error, else the last
# non-empty line; made safe for a Markdown cell.
first_error() {
  local line
  line=$(grep -m1 -iE 'read-only|permission denied|not permitted|no such file|cannot|can.t |could not|not found|disabled|denied|refused|unable|error|fail|panic' "$1" || true)
  [ -n "$line" ] || line=$(grep -v '^[[:space:]]*$' "$1" | tail -n1 || true)
  line=$(printf '%s' "$line" | tr -d '\r' | sed -e 's/^[[:space:]]*//' -e 's/|/\\|/g' -e 's/`/'"'"'/g')
  printf '%s' "${line:0:160}"
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

secs() { awk -v ms="$1" 'BEGIN {printf "%.2f s", ms / 1000}'; }

# cell_begin / cell_add / cell_end collect one cell's runs.
cell_begin() { cell_label=$1 cell_ms=() cell_rcs=() cell_fail=0 cell_rc=0 cell_log=; }
cell_add() {
  cell_ms+=("$last_ms")
  cell_rcs+=("$last_rc")
  if [ "$last_rc" -ne 0 ]; then
    cell_fail=$((cell_fail + 1)) cell_rc=$last_rc cell_log=$1
  fi
}
cell_end() {
  local m why
  m=$(secs "$(median "${cell_ms[@]}")")
  details+=("$cell_label: ${cell_ms[*]} ms; exit ${cell_rcs[*]}")
  if [ "$cell_fail" -eq 0 ]; then
    cell=$m
    return
  fi
  if [ "$cell_rc" -eq 124 ] || [ "$cell_rc" -eq 137 ]; then
    why="timed out after ${timeout_s}s"
  else
    why=$(first_error "$cell_log")
  fi
  if [ "$cell_fail" -lt "${#cell_ms[@]}" ]; then
    cell="failed ${cell_fail}/${#cell_ms[@]} (exit $cell_rc, $m): $why"
  else
    cell="failed (exit $cell_rc, $m): $why"
  fi
}

# warm_cell NAME DIR CMD...: one warm-up run, then the counted runs, in DIR.
warm_cell() {
  local name=$1 dir=$2 here=$PWD i
  shift 2
  cell_begin "$name"
  cd "$dir"
  timed "$logs/$name.warmup.log" "$@"
  for i in $(seq 1 "$runs"); do
    timed "$logs/$name.$i.log" "$@"
    cell_add "$logs/$name.$i.log"
  done
  cd "$here"
  cell_end
}

version_of() { "$@" 2>/dev/null | head -n1 || true; }

notes=()
have_starter=1 have_srt=1 have_codex=1 have_cache=1
if [ ! -x "$starter" ]; then have_starter=0; notes+=("custos: no starter at $starter (build: go build -o /tmp/custos-starter ./starter)"); fi
if [ -z "$srt" ] || [ ! -x "$srt" ]; then have_srt=0; notes+=("srt: not found (set SRT)"); fi
if [ -z "$codex" ] || [ ! -x "$codex" ]; then have_codex=0; notes+=("codex: not found (set CODEX)"); fi

echo "# bench-projects $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "- machine: $(uname -sr), $(nproc) cores; runs per cell: $runs (median wall time)"
echo "- go: $(version_of go version); node: $(version_of node --version); npm: $(version_of npm --version); python: $(version_of /usr/bin/python3 --version); cc: $(version_of cc --version); make: $(version_of make --version)"
echo "- bwrap: $(version_of bwrap --version)"
echo "- go in the sandboxes: custos sets GOTOOLCHAIN=local ($(GOTOOLCHAIN=local version_of go version)); srt and codex pass on GOTOOLCHAIN=$GOTOOLCHAIN"
if [ "$have_starter" = 1 ]; then
  repo=$(cd "$(dirname "$0")/.." && pwd)
  echo "- custos: $starter (repo $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" diff --quiet HEAD -- 2>/dev/null || echo ', uncommitted changes')); $("$starter" sandbox check 2>&1 | head -n1)"
fi
[ "$have_srt" = 1 ] && echo "- srt: $srt $(version_of "$srt" --version)"
[ "$have_codex" = 1 ] && echo "- codex: $codex $(version_of "$codex" --version)"
echo "- logs: $logs"
echo

srt_settings() {
  # srt's settings: writes only to the copy, no network.
  cat >"$1" <<EOF
{
  "network": { "allowedDomains": [], "deniedDomains": [], "allowLocalBinding": false },
  "filesystem": { "denyRead": [], "allowRead": [], "allowWrite": ["$2"], "denyWrite": [] }
}
EOF
}

rows=()
cmds=()
details=()
for proj in "${projects[@]}"; do
  name=$(basename "$proj")
  cmdline=$(test_command "$proj")
  read -r -a cmd <<<"$cmdline"
  rev=$(git -C "$proj" describe --tags --always 2>/dev/null || echo '?')
  cmds+=("- $name ($rev): \`$cmdline\`")
  copies=$work/copies/$name
  echo "== $name: $cmdline" >&2

  # (a) host, warm.
  fresh_copy "$proj" "$copies/host"
  warm_cell "$name.host" "$copies/host" "${cmd[@]}"
  c_host=$cell
  rm -rf "$copies/host"

  # (b) custos: first runs, each on a fresh copy with a cleared cache; then
  # warm runs on the last copy.
  c_first="n/a" c_warm="n/a"
  if [ "$have_starter" = 1 ]; then
    cell_begin "$name.custos-first"
    for i in $(seq 1 "$runs"); do
      ws=$copies/custos
      fresh_copy "$proj" "$ws"
      if [ "$have_cache" = 1 ] && ! "$starter" sandbox cache --workspace "$ws" --clear >"$logs/$name.custos-cache.log" 2>&1; then
        have_cache=0
        notes+=("custos: \`starter sandbox cache --workspace COPY --clear\` failed, so no cache was cleared: $(first_error "$logs/$name.custos-cache.log")")
      fi
      timed "$logs/$name.custos-first.$i.log" "$starter" sandbox exec --workspace "$ws" -- "${cmd[@]}"
      cell_add "$logs/$name.custos-first.$i.log"
    done
    cell_end
    c_first=$cell
    cell_begin "$name.custos-warm"
    for i in $(seq 1 "$runs"); do
      timed "$logs/$name.custos-warm.$i.log" "$starter" sandbox exec --workspace "$ws" -- "${cmd[@]}"
      cell_add "$logs/$name.custos-warm.$i.log"
    done
    cell_end
    c_warm=$cell
    rm -rf "$copies/custos"
  fi

  # (c) srt.
  c_srt="n/a"
  if [ "$have_srt" = 1 ]; then
    fresh_copy "$proj" "$copies/srt"
    srt_settings "$work/srt-settings.$name.json" "$copies/srt"
    warm_cell "$name.srt" "$copies/srt" "$srt" --settings "$work/srt-settings.$name.json" -- "${cmd[@]}"
    c_srt=$cell
    rm -rf "$copies/srt"
  fi

  # (d) codex.
  c_codex="n/a"
  if [ "$have_codex" = 1 ]; then
    fresh_copy "$proj" "$copies/codex"
    warm_cell "$name.codex" "$copies/codex" "$codex" sandbox -P :workspace -C "$copies/codex" -- "${cmd[@]}"
    c_codex=$cell
    rm -rf "$copies/codex"
  fi

  rows+=("| $name | $c_host | $c_first | $c_warm | $c_srt | $c_codex |")
done

echo "Test commands:"
printf '%s\n' "${cmds[@]}"
echo
echo "| project | host warm | custos first | custos warm | srt | codex |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
echo
echo "Every counted run (wall ms; exit codes):"
printf -- '- %s\n' "${details[@]}"
if [ ${#notes[@]} -gt 0 ]; then
  echo
  printf -- '- %s\n' "${notes[@]}"
fi
