#!/usr/bin/env bash
# measure-transports.sh — payload vs wire bytes, server tick p99 and
# serialize_ms for ENet and QUIC, snapshot compression on and off, at 64 and
# 128 clients, idle / weave / aggressive: the table in docs/transports.md.
#
# usage: scripts/measure-transports.sh [OUTDIR]
#
# Each leg starts `scalegate serve` on an ephemeral loopback port with its own
# config, runs `scalegate swarm` against it, stops the server (SIGINT, 10 s
# grace, then SIGKILL) and appends one row to OUTDIR/table.md (Markdown) and
# OUTDIR/rows.tsv. Every leg's config, server log, swarm log, report and
# metrics file stay in OUTDIR/<leg>/.
#
# Environment (defaults in brackets):
#   CLIENTS     ["64 128"]
#   PATTERNS    ["idle weave aggressive"]
#   TRANSPORTS  ["enet quic"]
#   COMPRESS    ["true false"]   [network] compress_snapshots
#   DURATION    [12]             swarm --duration, seconds (includes the ramp)
#   SCALEGATE   []               a prebuilt binary; else built into OUTDIR
# Loopback only. Needs jq.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$(mktemp -d /tmp/measure-transports.XXXXXX)}
mkdir -p "$out"
CLIENTS=${CLIENTS:-"64 128"}
PATTERNS=${PATTERNS:-"idle weave aggressive"}
TRANSPORTS=${TRANSPORTS:-"enet quic"}
COMPRESS=${COMPRESS:-"true false"}
DURATION=${DURATION:-12}

command -v jq >/dev/null || { echo "measure-transports: jq is required" >&2; exit 2; }
bin=${SCALEGATE:-$out/scalegate}
if [[ -z ${SCALEGATE:-} ]]; then
	(cd "$root" && go build -o "$bin" ./cmd/scalegate)
fi

server_pid=""
stop_server() {
	[[ -n $server_pid ]] || return 0
	kill -INT "$server_pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

# wait_listening FILE: the port from "scalegate serve: listening on 127.0.0.1:PORT".
wait_listening() {
	local f=$1 line
	for _ in $(seq 300); do
		line=$(grep -m1 -o 'listening on 127\.0\.0\.1:[0-9]*' "$f" 2>/dev/null || true)
		if [[ -n $line ]]; then
			echo "${line##*:}"
			return 0
		fi
		kill -0 "$server_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

header='| clients | pattern | compress | transport | payload KB/s/cl | wire KB/s/cl | wire/payload | wire out pps | tick p99 ms | serialize mean / p99 ms | observed tick Hz | dropped ticks | connected | swarm loop dt p99 ms | swarm CPU µs/client-tick | load1 |'
sep='|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'
[[ -f $out/table.md ]] || printf '%s\n%s\n' "$header" "$sep" >"$out/table.md"

for n in $CLIENTS; do
	for pat in $PATTERNS; do
		for comp in $COMPRESS; do
			for tr in $TRANSPORTS; do
				leg="n$n-$pat-compress_$comp-$tr"
				dir=$out/$leg
				mkdir -p "$dir"
				cat >"$dir/server.toml" <<-EOF
					[server]
					max_peers = 256
					[security]
					connect_rate_limit_count = 100000
					max_connections_per_ip = 1024
					[network]
					compress_snapshots = $comp
				EOF
				"$bin" serve --config "$dir/server.toml" --port 0 --transport "$tr" \
					--metrics-json "$dir/metrics.json" >"$dir/server.out" 2>"$dir/server.err" &
				server_pid=$!
				if ! port=$(wait_listening "$dir/server.out"); then
					echo "measure-transports: $leg: server did not start (see $dir/server.err)" >&2
					stop_server
					exit 5
				fi
				status=0
				"$bin" swarm 127.0.0.1 "$port" --clients "$n" --duration "$DURATION" --pattern "$pat" \
					--transport "$tr" --json "$dir/report.json" --server-metrics "$dir/metrics.json" \
					--progress off >"$dir/swarm.out" 2>&1 || status=$?
				load1=$(cut -d' ' -f1 /proc/loadavg)
				stop_server
				if [[ ! -s $dir/report.json ]]; then
					echo "measure-transports: $leg: no report (swarm exit $status, see $dir/swarm.out)" >&2
					continue
				fi
				row=$(jq -r --arg n "$n" --arg pat "$pat" --arg comp "$comp" --arg tr "$tr" --arg load "$load1" --arg st "$status" '
					def f(x): if x == null then "missing" else (x * 100 | round / 100 | tostring) end;
					[$n, $pat, $comp,
					 (.transport + (if .server_tick.transport != .transport then " (server: " + (.server_tick.transport // "?") + ")" else "" end)),
					 f(.downstream_kbs_per_client.mean),
					 f(.server_tick.wire_out_kbs_per_client),
					 (if (.downstream_kbs_per_client.mean // 0) > 0 and .server_tick.wire_out_kbs_per_client != null
					  then f(.server_tick.wire_out_kbs_per_client / .downstream_kbs_per_client.mean) else "missing" end),
					 f(.server_tick.wire_out_pps),
					 f(.server_tick.tick_ms.p99),
					 (f(.server_tick.serialize_ms.mean) + " / " + f(.server_tick.serialize_ms.p99)),
					 f(.observed_server_tick_hz.mean),
					 f(.server_tick.dropped_ticks),
					 ((.clients_connected | tostring) + "/" + $n + (if $st != "0" then " (exit " + $st + ")" else "" end)),
					 f(.worker_loop_dt_ms.p99),
					 f(.cpu_us_per_client_tick),
					 $load] | "| " + join(" | ") + " |"' "$dir/report.json")
				echo "$row" | tee -a "$out/table.md"
				echo "$row" | sed 's/^| //; s/ |$//; s/ | /\t/g' >>"$out/rows.tsv"
			done
		done
	done
done
echo "measure-transports: table in $out/table.md" >&2
