# bench.sh: what the benchmark scripts (tools/enetbench/run.sh,
# clients1000.sh, tools/swarmcost/floor.sh) share; they source it. Not run on
# its own.
#
#   write_server_toml FILE MAX_PEERS [MORE_TOML]
#     writes the reference server's config for a benchmark: MAX_PEERS peers
#     and a connect rate limit that admits a whole ramp (100,000 a second,
#     1,024 per IP, since every client is on 127.0.0.1), plus MORE_TOML.
#
#   median_of "V1 V2 ..."
#     prints the median of space-separated numbers (the mean of the middle
#     two for an even count).
#
#   start_server NAME CPU PORT OUTDIR [ENV=VALUE ...]
#     starts "$OUTDIR/scalegate serve --config $OUTDIR/server.toml" pinned
#     to CPU, with the given environment, logging to $OUTDIR/server.log and
#     writing $OUTDIR/metrics.json; returns once it listens, exits 5 (naming
#     NAME) when it dies or does not listen within 30 s. The server is
#     stopped in stages (interrupt, 5 s grace, kill) when the script exits.
#     SERVE_ARGS, when set, adds flags to `serve` (e.g. "--transport quic").

write_server_toml() {
  local file=$1 peers=$2 more=${3:-}
  cat >"$file" <<TOML
[server]
max_peers = $peers
[security]
connect_rate_limit_count = 100000
connect_rate_limit_window_s = 1
max_connections_per_ip = 1024
$more
TOML
}

median_of() {
  tr ' ' '\n' <<<"$1" | grep . | sort -g |
    awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

server_pid=""

stop_server() {
  [[ -n $server_pid ]] || return 0
  kill -INT "$server_pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || { wait "$server_pid" 2>/dev/null || true; server_pid=""; return 0; }; sleep 0.1; done
  kill -KILL "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

start_server() {
  local name=$1 cpu=$2 port=$3 dir=$4
  shift 4
  trap stop_server EXIT INT TERM
  env "$@" taskset -c "$cpu" "$dir/scalegate" serve --config "$dir/server.toml" --port "$port" \
    --metrics-json "$dir/metrics.json" ${SERVE_ARGS:-} >"$dir/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do
    grep -q "listening on" "$dir/server.log" && return 0
    kill -0 "$server_pid" 2>/dev/null || { echo "$name: server exited:"; cat "$dir/server.log"; exit 5; }
    sleep 0.1
  done
  echo "$name: server did not listen within 30 s"
  exit 5
}
