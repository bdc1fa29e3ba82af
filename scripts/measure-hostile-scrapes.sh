#!/usr/bin/env bash
# measure-hostile-scrapes.sh: one whole scrape of each hostile Prometheus
# or OpenMetrics body (internal/sources/promsource BenchmarkHostileScrape), each in
# a process of its own, so that its peak RSS is its own. Prints, per body:
# the scrape's wall time, whether the limits or the deadline refused it,
# the body's size, how far the peak RSS rose above the RSS with the body
# built (hwm-grown-MB), and the process's CPU seconds and peak RSS as
# /usr/bin/time read them. docs/security.md has the figures on record.
#
#   scripts/measure-hostile-scrapes.sh [OUT.txt]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out=${1:-}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root" && export PATH=/usr/local/go/bin:$PATH && go test -c -o "$bin/promsource.test" ./internal/sources/promsource)
names=$(cd "$root" && grep -oE '^\s*\{"[a-z0-9-]+", (omType|"text)' internal/sources/promsource/hostile_bench_test.go | sed -E 's/^\s*\{"([^"]*)".*/\1/')
{
  echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-38s %10s %8s %8s %12s %8s %10s  %s\n' body wall_ms refused body_MB hwm_grown_MB cpu_s maxrss_MB error
  for n in $names; do
    res=$(/usr/bin/time -f 'TIME %U %S %M' "$bin/promsource.test" -test.run '^$' -test.bench "BenchmarkHostileScrape/^$n\$" -test.benchtime 1x 2>&1)
    line=$(grep "^BenchmarkHostileScrape/$n" <<<"$res")
    ns=$(awk '{print $3}' <<<"$line")
    body=$(grep -o '[0-9.]* body-MB' <<<"$line" | cut -d' ' -f1)
    hwm=$(grep -o '[0-9.]* hwm-grown-MB' <<<"$line" | cut -d' ' -f1)
    ref=$(grep -o '[0-9.]* refused' <<<"$line" | cut -d' ' -f1)
    read -r _ u s m <<<"$(grep '^TIME' <<<"$res")"
    err=$(grep -o 'hostile_bench_test.go:[0-9]*: .*' <<<"$res" | sed 's/^[^ ]* //; s/http:[^:]*:[0-9]*/URL/' || true)
    printf '%-38s %10.1f %8s %8.2f %12.1f %8.2f %10.1f  %s\n' "$n" "$(awk "BEGIN{print $ns/1e6}")" "$ref" "$body" "$hwm" "$(awk "BEGIN{print $u+$s}")" "$(awk "BEGIN{print $m/1024}")" "$err"
  done
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
