#!/usr/bin/env bash
# scalegate.sh: install prerequisites, build scalegate into ./bin and run it
# with the given arguments from the repository root.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/deps.sh
export PATH=/usr/local/go/bin:$PATH
go build -o bin/scalegate ./cmd/scalegate
exec bin/scalegate "$@"
