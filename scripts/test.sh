#!/usr/bin/env bash
# test.sh: the project's test command. Installs prerequisites, vets, tests.
# Long runs (soak, sweeps, 60 s fuzzing) are not here: see README "Long runs".
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
export PATH=/usr/local/go/bin:$PATH
go vet ./...
go test -count=1 -timeout 25m ./...
