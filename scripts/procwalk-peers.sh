#!/usr/bin/env bash
# procwalk-peers.sh: the /proc walk of sandbox/procwalk_test.go, run inside
# custos' sandbox, Anthropic's sandbox-runtime (srt) and Codex's sandbox on
# the same workspace, side by side. The walker follows every /proc entry
# that can lead somewhere (cwd, root, exe, fd/N, map_files/*, environ, mem of
# every process and thread it sees, every mount, its own inherited
# descriptors) and prints, as JSON, each one that leads out of its own view:
# into another mount namespace, to a forbidden inode (the masked .env, a
# host file outside the workspace), to writable memory of a process outside
# its seccomp filter or mount namespace, to an environment holding the
# launcher's secret, or a descriptor it inherited.
#
# The launcher of each sandbox holds what a careless parent gives a worker:
# a secret variable in its environment and an open, inheritable descriptor
# of a host file. Each sandbox is told to hide .env (custos: Read(.env) in
# the workspace's settings; srt: denyRead; codex has no read-deny in its
# workspace profile, so its row shows the file as readable).
#
# usage: scripts/procwalk-peers.sh      (needs bwrap, srt and codex on PATH,
#                                        or SRT=… CODEX=…)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export GOTOOLCHAIN=go1.27.3
SRT=${SRT:-srt}
CODEX=${CODEX:-codex}
work=$(mktemp -d /var/tmp/custos-procwalk.XXXXXX)
trap 'rm -rf "$work"' EXIT

(cd "$root" && go build -o "$work/starter" ./starter && go test -c -o "$work/procwalk" ./sandbox)
mkdir -p "$work/outside"
echo host-secret >"$work/outside/secret"

# newws NAME: a workspace with the walker, a secret .env and a repository.
newws() {
	local ws=$work/$1
	mkdir -p "$ws/.custos"
	cp "$work/procwalk" "$ws/procwalk"
	echo 'TOKEN=hunter2' >"$ws/.env"
	echo '{"permissions":{"deny":["Read(.env)"]}}' >"$ws/.custos/settings.json"
	git -C "$ws" init -q
	echo "$ws"
}

# input WS: the walker's argument: the forbidden inodes and the secret.
input() {
	local ws=$1 parts=() p name
	for p in "$ws/.env" "$work/outside/secret" "$work/outside"; do
		case $p in */.env) name="the masked .env" ;; */secret) name="a host file outside the sandbox" ;; *) name="a host directory outside the sandbox" ;; esac
		parts+=("$(stat -L -c '{"name":"'"$name"'","dev":%d,"ino":%i}' "$p")")
	done
	local IFS=,
	echo '{"forbidden":['"${parts[*]}"'],"secret":"'"$CUSTOS_WALK_SECRET"'"}'
}

export CUSTOS_WALK_SECRET="custos-walk-$RANDOM$RANDOM"
exec 7<"$work/outside/secret" # inherited by every launcher below

report() {
	local name=$1 out=$2
	printf '## %s\n' "$name"
	if ! printf '%s\n' "$out" | tail -1 | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("processes %d, entries %d, followed %d, doors %d" % (r["processes"], r["links"], r["followed"], len(r["findings"] or [])))
for f in r["findings"] or []:
    print("  - " + f)'; then
		printf 'walker output: %s\n' "$out"
	fi
}

ws=$(newws custos)
report "custos (starter sandbox exec)" "$(cd "$ws" && "$work/starter" sandbox exec --workspace "$ws" -- ./procwalk custos-procwalk "$(input "$ws")" 2>&1)"

ws=$(newws srt)
echo '{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":["'"$ws"'/.env"],"allowWrite":["'"$ws"'"],"denyWrite":[]}}' >"$work/srt.json"
report "sandbox-runtime (srt)" "$(cd "$ws" && "$SRT" --settings "$work/srt.json" -- ./procwalk custos-procwalk "$(input "$ws")" 2>&1)"

ws=$(newws codex)
report "codex (codex sandbox -P :workspace)" "$("$CODEX" sandbox -P :workspace -C "$ws" -- ./procwalk custos-procwalk "$(input "$ws")" 2>&1)"
