# server.sh: starting and stopping the reference server for the enetbench
# scripts (run.sh, clients1000.sh), which source it. Not run on its own.
#
#   start_server NAME CPU PORT OUTDIR [ENV=VALUE ...]
#     starts "$OUTDIR/scalegate serve --config $OUTDIR/server.toml" pinned
#     to CPU, with the given environment, logging to $OUTDIR/server.log and
#     writing $OUTDIR/metrics.json; returns once it listens, exits 5 (naming
#     NAME) when it dies or does not listen within 30 s. The server is
#     stopped in stages (interrupt, 5 s grace, kill) when the script exits.
#     SERVE_ARGS, when set, adds flags to `serve` (e.g. "--transport quic").

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
