#!/usr/bin/env bash
# history-e2e.sh: the run history end to end, as a CI would keep it: one
# record per commit in a scratch git repository. 12 healthy `smoke` runs,
# then a commit that makes the reference server spin 5 ms more every tick
# (server.faults.extra_tick_ms=5, written into the profile as a team's
# server change would be), then 6 runs of it. `scalegate history` must name
# the first faulty run's commit as the change point of the tick p99 figure.
# About 70 s of runs on 2 cores, plus the build; not in the test command
# (docs/history.md).
#
# usage: scripts/history-e2e.sh [WORKDIR]   (default: a new temp directory)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/deps.sh
export PATH=/usr/local/go/bin:$PATH
go build -o bin/scalegate ./cmd/scalegate
sg="$root/bin/scalegate"
work="${1:-$(mktemp -d)}"
mkdir -p "$work" && cd "$work"
git init -q repo && cd repo
git config user.email e2e@scalegate.invalid && git config user.name "history e2e"
mkdir profiles && cp "$root/profiles/smoke.cue" profiles/
git add profiles && git commit -qm "smoke profile"
echo "history-e2e: uptime $(uptime)"

run() { # run N: one commit, one gate run with the history
	git commit -q --allow-empty -m "run $1"
	"$sg" --profiles profiles --profile smoke --history history --out "runs/$1" > "runs-$1.log" 2>&1 || true
	echo "history-e2e: run $1 at $(git rev-parse --short=10 HEAD): $(grep -o 'profile smoke (pr tier): [A-Z]*' "runs-$1.log" || echo 'no verdict')"
}
mkdir -p runs
for i in $(seq 1 12); do run "$i"; done
printf '\n// history-e2e: the server change under test\nserver: faults: extra_tick_ms: 5\n' >> profiles/smoke.cue
git commit -qam "server: 5 ms more per tick"
first_faulty=""
for i in $(seq 13 18); do
	run "$i"
	[ -n "$first_faulty" ] || first_faulty="$(git rev-parse HEAD)"
done
"$sg" history --dir history --profile smoke --html trend.html | tee history.txt
echo "history-e2e: uptime $(uptime)"
want="${first_faulty:0:10}"
line="$(grep -A1 '· tick_ms_p99_max ' history.txt | sed -n 2p)"
case "$line" in
*"run 13, commit $want "*) echo "history-e2e: PASS: the tick p99 change point is run 13, commit $want (the first faulty run); artifacts in $work" ;;
*) echo "history-e2e: FAIL: want the tick p99 change point at run 13, commit $want; got: ${line:-none}" >&2; exit 1 ;;
esac
