#!/usr/bin/env bash
# test.sh: the project's test command (README; .ci/run runs exactly this).
# Installs prerequisites, then fails on any gofmt diff, vets, and tests: the
# packages in race_pkgs under the race detector, every other one without it
# (the race run replaces their plain run, so it costs only the detector's
# overhead). race_pkgs are the ones where -race fits the time budget: the
# server, transport, swarm and CLI tests multiply several-fold under it
# (server: ~20 s plain, ~2 min -race on a loaded 2-core machine).
# Long runs (soak, sweeps, 60 s fuzzing) are not here: see README "Long runs".
set -euo pipefail
cd "$(dirname "$0")/.."
# The report's browser test (internal/htmlreport) needs Chromium.
export SCALEGATE_NEED_CHROMIUM=1
source scripts/deps.sh
export PATH=/usr/local/go/bin:$PATH

race_pkgs=(./internal/proto ./internal/snapshot ./internal/stats ./internal/gate ./internal/launcher ./internal/report ./internal/exitcode ./internal/merge ./internal/k8s)

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "test.sh: gofmt would reformat these files (run gofmt -w on them):" >&2
  echo "$unformatted" | sed 's/^/  /' >&2
  exit 1
fi

go vet ./...
go test -count=1 -timeout 25m -race "${race_pkgs[@]}"
# What the race detector changes: allocation counts (sync.Pool drops items at
# random under -race), so the allocation tests of the race packages run plain too.
go test -count=1 -run 'NotAllocate' ./internal/snapshot
mapfile -t other_pkgs < <(go list ./... | grep -vxF -f <(go list "${race_pkgs[@]}"))
go test -count=1 -timeout 25m "${other_pkgs[@]}"
