#!/usr/bin/env bash
# sdk.sh: what a bot built with the bot package costs, against the built-in
# swarm, side by side in one run (docs/swarm.md, "The SDK path").
#
# Every leg runs one swarm process pinned to BENCH_CPU with GOMAXPROCS=1,
# --threads 1, and its server pinned to SERVER_CPU, for SECONDS, at CLIENTS
# clients, 60 Hz, weave:
#   ENet     scalegate swarm (load protocol v1 through the same Protocol
#            interface) against the reference server on ENet (held workers,
#            decoding on)
#   ENet-0   the same with BEFORE=path/to/an-older-scalegate (optional):
#            the built-in swarm before and after a change, in one run
#   UDP-SDK  examples/udpgame's bot (the bot package over raw UDP, held
#            workers) against examples/udpgame's server, whose state update
#            is sized like the reference server's snapshot (UDP_STATE
#            players × 6 B + 6 B; 200 → 1,206 B)
# Rounds alternate the legs; the medians and their ratios are printed.
#
#   tools/swarmcost/sdk.sh [CLIENTS] [SECONDS]      e.g. sdk.sh 128 20
#
# Env: ROUNDS (default 3), BENCH_CPU (1), SERVER_CPU (0), PORT (47660),
# UDP_STATE (200), BEFORE (unset), OUT (default a fresh temp dir; reports
# and logs are kept there).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/enetbench/bench.sh
export PATH=/usr/local/go/bin:$PATH

n=${1:-128}
seconds=${2:-20}
rounds=${ROUNDS:-3}
bench_cpu=${BENCH_CPU:-1}
server_cpu=${SERVER_CPU:-0}
port=${PORT:-47660}
udp_state=${UDP_STATE:-200}
out=${OUT:-$(mktemp -d /tmp/sdkcost.XXXXXX)}
mkdir -p "$out"

go build -o "$out/scalegate" ./cmd/scalegate
go build -o "$out/udpbot" ./examples/udpgame/bot
go build -o "$out/udpserver" ./examples/udpgame/server
write_server_toml "$out/server.toml" $((n + 16))

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "servers on cpu $server_cpu, swarms on cpu $bench_cpu (GOMAXPROCS=1, --threads 1), $n clients, ${seconds}s per leg, 60 Hz, weave"
printf '%-8s %5s %7s %12s %9s %9s %s\n' leg round joined us/cl-tick tick_hz kbs note

# line prints a leg's figures on stderr and its CPU per client-tick on stdout.
line() { # label round report
  printf '%-8s %5s %7s %12.2f %9.2f %9.2f %s\n' "$1" "$2" "$(jq -r .clients_connected "$3")" "$(jq -r .cpu_us_per_client_tick "$3")" \
    "$(jq -r .observed_server_tick_hz.mean "$3")" "$(jq -r .downstream_kbs_per_client.mean "$3")" \
    "pacing $(jq -r .worker_pacing "$3"), service p99 $(jq -r .service_interval_ms.p99 "$3") ms, $(jq -r .protocol "$3")" >&2
  jq -r .cpu_us_per_client_tick "$3"
}

# enet_leg runs a scalegate binary's swarm against a fresh reference server.
enet_leg() { # binary label round
  local r="$out/$2_round_$3.json"
  start_server sdk.sh "$server_cpu" "$port" "$out" >&2
  GOMAXPROCS=1 taskset -c "$bench_cpu" "$1" swarm 127.0.0.1 "$port" --clients "$n" --duration "$seconds" \
    --threads 1 --progress off --json "$r" >"${r%.json}.txt" 2>&1 || true
  stop_server
  line "$2" "$3" "$r"
}

# udp_leg runs the udpgame bot against a fresh udpgame server.
udp_leg() { # round
  local r="$out/UDP-SDK_round_$1.json" log="$out/udpserver_round_$1.log" pid
  taskset -c "$server_cpu" "$out/udpserver" -listen "127.0.0.1:$port" -metrics-json "$out/udp-metrics.json" \
    -max-players $((n + 16)) -state-entities "$udp_state" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q "listening on" "$log" && break; sleep 0.1; done
  GOMAXPROCS=1 taskset -c "$bench_cpu" "$out/udpbot" 127.0.0.1 "$port" --clients "$n" --duration "$seconds" \
    --threads 1 --progress off --server-metrics "$out/udp-metrics.json" --json "$r" >"${r%.json}.txt" 2>&1 || true
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  line UDP-SDK "$1" "$r"
}

legs="ENet UDP-SDK"
[[ -n ${BEFORE:-} ]] && legs="ENet-0 $legs"
declare -A us=()
for ((round = 1; round <= rounds; round++)); do
  [[ -n ${BEFORE:-} ]] && us[ENet-0]+="$(enet_leg "$BEFORE" ENet-0 "$round") "
  us[ENet]+="$(enet_leg "$out/scalegate" ENet "$round") "
  us[UDP-SDK]+="$(udp_leg "$round") "
done
declare -A med=()
printf 'median %d clients over %d rounds:' "$n" "$rounds"
for l in $legs; do
  med[$l]=$(median_of "${us[$l]}")
  printf ' %s %.2f µs' "$l" "${med[$l]}"
done
echo
ratio() { awk -v a="${med[$1]}" -v b="${med[$2]}" -v l="$1/$2" 'BEGIN { if (b > 0) printf "ratio %s CPU per client-tick = %.2f\n", l, a / b }'; }
ratio UDP-SDK ENet
[[ -n ${BEFORE:-} ]] && ratio ENet ENet-0
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "artifacts: $out"
