#!/usr/bin/env bash
# floor.sh: what a QUIC client costs the swarm, against what quic-go itself
# costs, side by side in one run (docs/swarm.md, "QUIC").
#
# Every leg runs one client process pinned to BENCH_CPU with GOMAXPROCS=1
# and its server pinned to SERVER_CPU, for SECONDS, at CLIENTS clients:
#   ENet   scalegate swarm against the reference server on ENet (held workers)
#   QUIC   scalegate swarm against the reference server on QUIC
#   host   tools/swarmcost through scalegate's QUIC host: no swarm, no
#          decoding, a 1200-byte datagram down and an Input up per tick
#   bare   tools/swarmcost with quic-go used directly (bare.go): the same
#          traffic with none of scalegate's code, the floor of quic-go
# Rounds alternate the legs; the medians and their ratios are printed.
#
#   tools/swarmcost/floor.sh [CLIENTS] [SECONDS]      e.g. floor.sh 128 20
#
# Env: ROUNDS (default 3), BENCH_CPU (1), SERVER_CPU (0), PORT (47640),
# OUT (default a fresh temp dir; reports and logs are kept there).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/enetbench/bench.sh
export PATH=/usr/local/go/bin:$PATH

n=${1:-128}
seconds=${2:-20}
rounds=${ROUNDS:-3}
bench_cpu=${BENCH_CPU:-1}
server_cpu=${SERVER_CPU:-0}
port=${PORT:-47640}
out=${OUT:-$(mktemp -d /tmp/quicfloor.XXXXXX)}
mkdir -p "$out"

go build -o "$out/scalegate" ./cmd/scalegate
go build -o "$out/swarmcost" ./tools/swarmcost
write_server_toml "$out/server.toml" $((n + 16))

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "servers on cpu $server_cpu, clients on cpu $bench_cpu (GOMAXPROCS=1), $n clients, ${seconds}s per leg, 60 Hz"
printf '%-5s %5s %7s %12s %9s %s\n' leg round joined us/cl-tick tick_hz note

# One swarm leg against a fresh reference server on the transport: its line
# goes to stderr, its CPU per client-tick to stdout.
swarm_leg() { # transport label round
  local r="$out/$2_round_$3.json"
  SERVE_ARGS="--transport $1" start_server floor.sh "$server_cpu" "$port" "$out" >&2
  GOMAXPROCS=1 taskset -c "$bench_cpu" "$out/scalegate" swarm 127.0.0.1 "$port" --transport "$1" --clients "$n" \
    --duration "$seconds" --threads 1 --progress off --json "$r" >"${r%.json}.txt" 2>&1 || true
  stop_server
  printf '%-5s %5s %7s %12.2f %9.2f %s\n' "$2" "$3" "$(jq -r .clients_connected "$r")" "$(jq -r .cpu_us_per_client_tick "$r")" \
    "$(jq -r .observed_server_tick_hz.mean "$r")" "pacing $(jq -r .worker_pacing "$r"), decode errors $(jq -r .snapshot_decode_errors "$r")" >&2
  jq -r .cpu_us_per_client_tick "$r"
}

# One swarmcost leg (it starts its own server, pinned): its line goes to
# stderr, its CPU per client-tick to stdout.
cost_leg() { # stack round
  local r="$out/$1_round_$2.json"
  GOMAXPROCS=1 taskset -c "$bench_cpu" "$out/swarmcost" -stack "$1" -clients "$n" -per-socket 1 -snapshot 1200 \
    -duration "${seconds}s" -server-cpu "$server_cpu" -json "$r" >"${r%.json}.txt" 2>&1 || true
  printf '%-5s %5s %7s %12.2f %9.2f %s\n' "$1" "$2" "$(jq -r '.[0].clients' "$r")" "$(jq -r '.[0].cpu_us_per_client_tick' "$r")" \
    "$(jq -r '.[0].server_tick_hz' "$r")" "delivered $(jq -r '.[0].snapshots_delivered_ratio' "$r"), $(jq -r '.[0].goroutines_per_client' "$r") goroutines/client" >&2
  jq -r '.[0].cpu_us_per_client_tick' "$r"
}

declare -A us=()
for ((round = 1; round <= rounds; round++)); do
  us[ENet]+="$(swarm_leg enet ENet "$round") "
  us[QUIC]+="$(swarm_leg quic QUIC "$round") "
  us[host]+="$(cost_leg host "$round") "
  us[bare]+="$(cost_leg bare "$round") "
done
declare -A med=()
for l in ENet QUIC host bare; do
  med[$l]=$(median_of "${us[$l]}")
done
printf 'median %d clients over %d rounds: ENet %.2f µs, QUIC %.2f, host %.2f, bare %.2f\n' "$n" "$rounds" \
  "${med[ENet]}" "${med[QUIC]}" "${med[host]}" "${med[bare]}"
ratio() { awk -v a="${med[$1]}" -v b="${med[$2]}" -v l="$1/$2" 'BEGIN { if (b > 0) printf "ratio %s CPU per client-tick = %.2f\n", l, a / b }'; }
ratio QUIC ENet
ratio bare ENet
ratio QUIC bare
ratio host bare
echo "artifacts: $out"
