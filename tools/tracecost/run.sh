#!/bin/bash
# Recording cost at 128 clients (docs/trace-format.md): the reference server
# with [trace] input_trace_dir off, then on, interleaved ROUNDS times in one
# window, the same swarm against each; prints the server's tick_ms of the
# final metrics file for every run.
#
#   go build -o /tmp/scalegate ./cmd/scalegate
#   tools/tracecost/run.sh /tmp/scalegate [ROUNDS] [SECONDS]
set -euo pipefail
bin=${1:?usage: run.sh SCALEGATE [ROUNDS] [SECONDS]}
rounds=${2:-3}
secs=${3:-25}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for round in $(seq "$rounds"); do
  for mode in off on; do
    port=$((27800 + round * 2))
    if [ "$mode" = on ]; then port=$((port + 1)); fi
    cfg=$work/s-$mode-$round.toml
    cat > "$cfg" <<EOT
[server]
port = $port
max_peers = 200
[security]
connect_rate_limit_count = 100000
connect_rate_limit_window_s = 1
max_connections_per_ip = 200
[world]
test_spawn_ai_count = 512
test_spawn_spread_km = 20
[metrics]
tick_json_path = "$work/m-$mode-$round.json"
tick_json_interval_ms = 250
EOT
    if [ "$mode" = on ]; then printf '[trace]\ninput_trace_dir = "%s/traces-%s"\n' "$work" "$round" >> "$cfg"; fi
    "$bin" serve --config "$cfg" > "$work/server.log" 2>&1 &
    spid=$!
    for _ in $(seq 100); do [ -s "$work/m-$mode-$round.json" ] && break; sleep 0.1; done
    "$bin" swarm 127.0.0.1 "$port" --clients 128 --duration "$secs" --pattern weave --progress off \
      --server-metrics "$work/m-$mode-$round.json" --json "$work/r-$mode-$round.json" > /dev/null 2>&1 || true
    kill -INT "$spid"; wait "$spid" || true
    python3 - "$work/r-$mode-$round.json" "$round" "$mode" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1])); st = rep["server_tick"]; t = st["tick_ms"]
print(f"round {sys.argv[2]} recording {sys.argv[3]:3s}: tick_ms mean {t['mean']:.2f} p95 {t['p95']:.2f} "
      f"p99 {t['p99']:.2f}; server tick_hz {st['tick_hz']:.2f}; "
      f"worker dt p99 {rep['worker_loop_dt_ms']['p99']:.2f}; trace_records {st.get('trace_records')}")
PY
  done
done
