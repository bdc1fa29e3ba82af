#!/usr/bin/env bash
# clients1000.sh: one swarm worker on one core driving N ENet clients (1000
# by default) at 60 Hz against the reference server on the other core, the
# measurement behind docs/swarm.md "1,000 clients on one core".
#
# The server is configured so that it is not the limit: a 200 m interest
# radius, a 400-byte snapshot budget and no compression keep its per-peer
# work small, and the overrun governor holds its 60 Hz tick by sending
# snapshots less often when a tick runs long (one core of this class
# cannot send 1000 full-rate snapshot streams: without the governor it
# ticked at 58.2 Hz, dropping ticks, at 94 % CPU). GOVERNOR=false runs that
# comparison. The swarm still services every client's host and sends every
# Input at 60 Hz; what it receives is whatever the server sends.
#
#   tools/enetbench/clients1000.sh [CLIENTS] [SECONDS]
#
# Env: BENCH_CPU (default 1), SERVER_CPU (default 0), PORT (default 47650),
# GOVERNOR (default true), OUT (default a fresh temp dir).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/enetbench/bench.sh
export PATH=/usr/local/go/bin:$PATH

clients=${1:-1000}
seconds=${2:-30}
bench_cpu=${BENCH_CPU:-1}
server_cpu=${SERVER_CPU:-0}
port=${PORT:-47650}
governor=${GOVERNOR:-true}
out=${OUT:-$(mktemp -d /tmp/clients1000.XXXXXX)}
mkdir -p "$out"
go build -o "$out/scalegate" ./cmd/scalegate

write_server_toml "$out/server.toml" $((clients + 24)) "[world]
interest_radius_m = 200
snapshot_budget_bytes = 400
sim_worker_threads = 1
overrun_governor = $governor
[network]
compress_snapshots = false"

# One core each, so each process gets one P.
start_server clients1000.sh "$server_cpu" "$port" "$out" GOMAXPROCS=1

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server on cpu $server_cpu (governor $governor), swarm on cpu $bench_cpu: $clients clients, ${seconds}s, 60 Hz, ramp 5 ms"
GOMAXPROCS=1 taskset -c "$bench_cpu" "$out/scalegate" swarm 127.0.0.1 "$port" --clients "$clients" --duration "$seconds" \
  --ramp-ms 5 --threads 1 --progress off --server-metrics "$out/metrics.json" --json "$out/report.json" || true
jq -r '"server: tick-Hz \(.server_tick.tick_hz) dropped \(.server_tick.dropped_ticks) tick p99 \(.server_tick.tick_ms.p99) ms cpu \(.server_tick.cpu_pct) % load_factor \(.server_tick.load_factor) (min \(.server_tick.load_factor_min))"' "$out/report.json"
echo "artifacts: $out"
