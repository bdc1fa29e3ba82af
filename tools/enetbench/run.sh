#!/usr/bin/env bash
# run.sh: the swarm-vs-bare-libenet comparison of docs/swarm.md, in one run.
#
# Builds tools/enetbench (gcc -lenet) and scalegate, starts the reference
# server (`scalegate serve`) pinned to SERVER_CPU, then for every client count
# runs the bare C client loop and `scalegate swarm --threads 1` one after the
# other against that same server, both pinned to BENCH_CPU (one core, so the
# Go runtime gets GOMAXPROCS=1). Prints one line per leg plus the ratio of
# CPU time per client-tick (Go / C), and stops the server in stages. "Go" is
# the swarm as shipped (it decodes every sg-entities body and services all
# its clients in one batched call per tick); "Go-nd" runs with
# --decode-bodies=false, the like-for-like loop of the C client. With
# PERCLIENT=1 a "Go-pc" row adds the swarm with --batch=false (one service
# call per client, as before batching), and with TICKER=1 a "Go-tk" row the
# swarm with --hold-threads=false (workers park on a Go timer between ticks
# instead of keeping their thread), both decoding on, for a side-by-side.
# "C" is the C loop speaking protocol v1.0 (Input, drain); "C11" the same
# loop doing the v1.1 work the swarm does by default (Features, an Input
# send-time ring timed by snapshot acknowledgements, a Ping every 100 ms
# timed by its Pong; PING_HZ sets the rate, 10 as the swarm's --ping-hz),
# and reading its socket once per drain as the swarm does.
# The Go swarm does that v1.1 work too, so Go/C11 is the like-for-like ratio
# and Go/C what v1.1 costs on top of the v1.0 loop. "C11d" is C11 that also
# asks for delta snapshots, decodes every sg-entities/3 body against its
# client's baseline ring and acknowledges it (sgdelta.c), as the Go swarm
# does with the reference server: Go/C11d is the like-for-like ratio of the
# swarm as shipped, Go-nd/C11 that of the loop without body decoding (both
# receive full bodies: a client that never acknowledges gets no deltas).
# Before the legs it times sgdelta.c and the Go decoder on the same bodies
# (decbench against BenchmarkRingDecodeOwnBodies) and prints Go/C: C11d is
# a fair stand-in only while the C decoder is not the slower one.
# C11d needs libzstd-dev (zstd.h) besides libenet-dev. With BEFORE=REV a
# "Go@REV" row adds the swarm as shipped built from that commit (a git
# worktree in OUT), so a change is measured against its parent in one run.
#
#   tools/enetbench/run.sh [COUNTS] [SECONDS]     e.g. run.sh "64 128 256" 20
#
# Each count runs ROUNDS rounds (default 3) of every implementation in turn
# and prints every leg, then the medians and their ratios: one 20 s leg of
# the same loop varies by ±10 % on a shared 2-vCPU VM, more than the
# differences being measured.
#
# Env: ROUNDS, BENCH_CPU (default 1), SERVER_CPU (default 0), PORT (default 47600), PING_HZ (default 10),
# BEFORE (a commit), OUT (default a fresh temp dir; reports and logs are kept there).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/enetbench/bench.sh
export PATH=/usr/local/go/bin:$PATH

counts=${1:-"32 64 128 192 256"}
seconds=${2:-20}
rounds=${ROUNDS:-3}
bench_cpu=${BENCH_CPU:-1}
server_cpu=${SERVER_CPU:-0}
port=${PORT:-47600}
ping_hz=${PING_HZ:-10}
out=${OUT:-$(mktemp -d /tmp/enetbench.XXXXXX)}
mkdir -p "$out"

gcc -O2 -Wall -Wextra -o "$out/enetbench" tools/enetbench/enetbench.c tools/enetbench/sgdelta.c -lenet -lzstd -lm
go build -o "$out/scalegate" ./cmd/scalegate
if [[ -n ${BEFORE:-} ]]; then
  git worktree add --detach -q "$out/before" "$BEFORE"
  (cd "$out/before" && go build -o "$out/scalegate-before" ./cmd/scalegate)
  git worktree remove --force "$out/before"
fi

# The two decoders on the same bodies, before any leg: C11d stands for
# the swarm's work only if its C decoder is no slower than the Go one.
# BenchmarkRingDecodeOwnBodies writes its streams once (-ringcorpus, one
# untimed iteration); decbench times sgdelta.c on them in the same order.
# Three alternating pairs, both pinned to BENCH_CPU.
decoders() {
  gcc -O2 -Wall -Wextra -o "$out/decbench" tools/enetbench/decbench.c tools/enetbench/sgdelta.c -lzstd
  go test -c -o "$out/snapshot.test" ./internal/wire/snapshot
  local bench=("$out/snapshot.test" -test.run '^$' -test.bench 'RingDecodeOwnBodies$')
  "${bench[@]}" -test.benchtime 1x -ringcorpus "$out/ringcorpus.bin" >/dev/null
  local cs="" gs="" i
  for i in 1 2 3; do
    gs+="$(GOMAXPROCS=1 taskset -c "$bench_cpu" "${bench[@]}" -test.benchtime 2s |
      sed -n 's/.* \([0-9.]*\) ns\/client-snapshot.*/\1/p') "
    cs+="$(taskset -c "$bench_cpu" "$out/decbench" "$out/ringcorpus.bin" 2 | sed -n 's/.*: \([0-9.]*\) ns\/client-snapshot.*/\1/p') "
  done
  awk -v g="$(median_of "$gs")" -v c="$(median_of "$cs")" -v gs="$gs" -v cs="$cs" \
    'BEGIN { if (g > 0 && c > 0) printf "decoders on the same bodies, ns per client-snapshot: C %s(median %.0f), Go %s(median %.0f): Go/C %.2f\n", cs, c, gs, g, g / c; else { print "run.sh: the decoder comparison printed no figure" > "/dev/stderr"; exit 1 } }'
}
decoders

max=0
for n in $counts; do ((n > max)) && max=$n; done
write_server_toml "$out/server.toml" $((max + 16))

start_server run.sh "$server_cpu" "$port" "$out"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server on cpu $server_cpu, client loops on cpu $bench_cpu, ${seconds}s per leg, 60 Hz, weave input, ramp 20 ms"
printf '%-5s %-6s %5s %7s %9s %9s %9s %12s %9s %s\n' impl clients round joined dt_p50 dt_p99 dt_max us/cl-tick tick_hz pacing

# One C leg: its table line goes to stderr, its raw line to c.txt, and its
# CPU per client-tick to stdout.
c_leg() { # n round label ping_hz [deltas]
  local c
  c=$(taskset -c "$bench_cpu" "$out/enetbench" 127.0.0.1 "$port" "$1" "$seconds" 60 20 "$4" "${5:-0}" || true)
  echo "$3 $c" >>"$out/c.txt"
  kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $c"; }
  # A C11 leg shows that its v1.1 work happened: Inputs timed by acks and
  # Pongs, with their mean latencies.
  local v11=""
  [[ $4 != 0 ]] && v11="acked $(kv inputs_acked) (mean $(kv input_latency_mean_ms) ms), pongs $(kv pongs) (mean $(kv rtt_mean_ms) ms)"
  # A C11d leg shows that it decoded deltas, and that none failed.
  if [[ ${5:-0} != 0 ]]; then
    v11="$v11, deltas $(kv delta_bodies) full $(kv full_bodies) decode errors $(kv decode_errors)"
    # Without deltas decoded, or with any failing, the row would not be the
    # work it names: the comparison stops after this client count's rounds,
    # before printing its medians.
    [[ $(kv delta_bodies) =~ ^[1-9] && $(kv decode_errors) == 0 ]] || echo "$3 leg, $1 clients, round $2: $c" >>"$out/c11d-failed"
  fi
  printf '%-5s %-6s %5s %7s %9s %9s %9s %12s %9s %s\n' "$3" "$1" "$2" "$(kv joined)" "$(kv dt_p50_ms)" "$(kv dt_p99_ms)" "$(kv dt_max_ms)" "$(kv cpu_us_per_client_tick)" "$(kv tick_hz_mean)" "$v11" >&2
  kv cpu_us_per_client_tick
}

# One swarm leg (decode, batch): its table line goes to stderr, its report
# stays in $out, and its CPU per client-tick goes to stdout.
go_leg() { # n round label decode batch hold [binary]
  local r="$out/go_$1_round_$2_${3//@/_}.json"
  GOMAXPROCS=1 taskset -c "$bench_cpu" "${7:-$out/scalegate}" swarm 127.0.0.1 "$port" --clients "$1" --duration "$seconds" \
    --threads 1 --progress off --decode-bodies="$4" --batch="$5" --hold-threads="$6" --json "$r" >"${r%.json}.txt" 2>&1 || true
  printf '%-5s %-6s %5s %7s %9.3f %9.3f %9.3f %12.2f %9.2f %s\n' "$3" "$1" "$2" "$(jq -r .clients_connected "$r")" \
    "$(jq -r .worker_loop_dt_ms.p50 "$r")" "$(jq -r .worker_loop_dt_ms.p99 "$r")" "$(jq -r .worker_loop_dt_ms.max "$r")" \
    "$(jq -r .cpu_us_per_client_tick "$r")" "$(jq -r .observed_server_tick_hz.mean "$r")" \
    "$(jq -r '"\(.worker_pacing), acked \(.inputs_acked) (p50 \(.input_latency_ms.p50) ms), rtt \(.rtt_source) p50 \(.rtt_ms.p50) ms"' "$r")" >&2
  jq -r .cpu_us_per_client_tick "$r"
}

# "Go" is the swarm as shipped (decoding every sg-entities body, which the
# C loop does not do); "Go-nd" skips body decoding (the like-for-like loop).
legs="Go:true:true:true Go-nd:false:true:true"
[[ ${PERCLIENT:-0} == 1 ]] && legs="$legs Go-pc:true:false:true"
[[ ${TICKER:-0} == 1 ]] && legs="$legs Go-tk:true:true:false"
[[ -n ${BEFORE:-} ]] && legs="$legs Go@${BEFORE:0:7}:true:true:true:$out/scalegate-before"
for n in $counts; do
  declare -A us=()
  # Rounds alternate the implementations so that a slow minute of the
  # machine lands on all of them; the ratios are of the medians.
  for ((round = 1; round <= rounds; round++)); do
    us[C]+="$(c_leg "$n" "$round" C 0) "
    us[C11]+="$(c_leg "$n" "$round" C11 "$ping_hz") "
    us[C11d]+="$(c_leg "$n" "$round" C11d "$ping_hz" 1) "
    for leg in $legs; do
      IFS=: read -r label decode batch hold bin <<<"$leg"
      us[$label]+="$(go_leg "$n" "$round" "$label" "$decode" "$batch" "$hold" "$bin") "
    done
  done
  if [[ -s $out/c11d-failed ]]; then
    echo "run.sh: a C11d leg decoded no deltas or failed to decode some; its line:" >&2
    cat "$out/c11d-failed" >&2
    exit 1
  fi
  c_med=$(median_of "${us[C]}")
  c11_med=$(median_of "${us[C11]}")
  c11d_med=$(median_of "${us[C11d]}")
  printf 'median %d clients over %d rounds: C %.2f µs, C11 %.2f, C11d %.2f' "$n" "$rounds" "$c_med" "$c11_med" "$c11d_med"
  for leg in $legs; do
    label=${leg%%:*}
    printf ', %s %.2f' "$label" "$(median_of "${us[$label]}")"
  done
  echo
  for leg in $legs; do
    label=${leg%%:*}
    g=$(median_of "${us[$label]}")
    awk -v g="$g" -v c="$c_med" -v c11="$c11_med" -v c11d="$c11d_med" -v n="$n" -v l="$label" \
      'BEGIN { if (c > 0 && c11 > 0 && c11d > 0) printf "ratio %d clients: %s/C11 CPU per client-tick = %.2f (%s/C %.2f, %s/C11d %.2f)\n", n, l, g / c11, l, g / c, l, g / c11d }'
  done
  unset us
done
echo "artifacts: $out"
