#!/usr/bin/env bash
# measure-swarm-rss.sh: the swarm's resident memory over one long leg, read
# from /proc every INTERVAL seconds (default 60) while the gate runs it, so
# that "the swarm's memory is flat in run length" is a recorded figure, not
# a belief. The gate runs as it always does; this only watches its swarm.
#
#   scripts/measure-swarm-rss.sh OUT [INTERVAL] -- SCALEGATE-ARGS...
#   scripts/measure-swarm-rss.sh results/rss-quic 60 -- --profile soak --set duration_s=3720
#   scripts/measure-swarm-rss.sh results/rss-enet 60 -- --profile soak --set duration_s=3720 --set transport=enet
#
# OUT/swarm_rss.csv has one row per sample: seconds since the swarm
# started, its VmRSS, VmHWM, RssAnon (its own memory: heap, stacks) and
# RssFile (the mapped binary's pages) in KB, and the host's load average; the
# gate's own output is OUT/gate.log and its run directory OUT/run.
# Run it alone on the machine: docs/swarm.md "Memory over long runs" has
# the figures on record and how they were taken.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out=${1:?usage: measure-swarm-rss.sh OUT [INTERVAL] -- SCALEGATE-ARGS...}
shift
interval=60
if [ "${1:-}" != "--" ]; then interval=$1; shift; fi
[ "${1:-}" = "--" ] || { echo "measure-swarm-rss: missing -- before the scalegate arguments" >&2; exit 2; }
shift
mkdir -p "$out"
[ -e "$out/run" ] && { echo "measure-swarm-rss: $out/run exists: pick a new OUT" >&2; exit 2; }
(cd "$root" && source scripts/deps.sh && export PATH=/usr/local/go/bin:$PATH && go build -o bin/scalegate ./cmd/scalegate)
"$root/bin/scalegate" "$@" --out "$out/run" >"$out/gate.log" 2>&1 &
gate=$!
trap 'kill -INT $gate 2>/dev/null || true; wait $gate 2>/dev/null || true' INT TERM
csv="$out/swarm_rss.csv"
echo "t_s,rss_kb,hwm_kb,anon_kb,file_kb,loadavg1" >"$csv"
started="" next=0
# The swarm is the gate's grandchild (under its guardian): the process whose
# argv is ".../scalegate swarm ...", never the guardian's "__guardian". Only
# a descendant of this gate counts: the newest swarm on the machine may be a
# test's (an hour's samples of 2026-12-02 held four minutes of one).
descends_from_gate() {
  local p=$1
  while [ -n "$p" ] && [ "$p" -gt 1 ]; do
    [ "$p" = "$gate" ] && return 0
    p=$(awk '/^PPid:/{print $2}' "/proc/$p/status" 2>/dev/null || true)
  done
  return 1
}
own_swarm() {
  local p
  for p in $(pgrep -f '^[^ ]*scalegate swarm ' || true); do
    if descends_from_gate "$p"; then echo "$p"; return; fi
  done
}
pid=""
while kill -0 "$gate" 2>/dev/null; do
  if [ -z "$pid" ] || [ ! -r "/proc/$pid/status" ]; then pid=$(own_swarm); fi
  if [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; then
    now=$(date +%s)
    if [ -z "$started" ]; then started=$now; fi
    if [ $((now - started)) -ge "$next" ]; then
      st=$(awk '/^(VmRSS|VmHWM|RssAnon|RssFile):/{printf "%s=%s ", $1, $2}' "/proc/$pid/status" 2>/dev/null || echo "")
      field() { echo "$st" | tr ' ' '\n' | awk -F= -v k="$1:" '$1 == k {print $2}'; }
      rss=$(field VmRSS)
      if [ -n "$rss" ]; then
        echo "$((now - started)),$rss,$(field VmHWM),$(field RssAnon),$(field RssFile),$(cut -d' ' -f1 /proc/loadavg)" >>"$csv"
        next=$((next + interval))
      fi
    fi
  fi
  sleep 1
done
wait "$gate" && rc=0 || rc=$?
echo "measure-swarm-rss: gate exit $rc; samples in $csv" >&2
exit "$rc"
