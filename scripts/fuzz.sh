#!/usr/bin/env bash
# Runs every Fuzz* target of the module for the given time each (default 30s).
# Each new input is minimised for at most FUZZMINIMIZE (default 5s): Go's
# default of 60 s leaves a target with seeds of tens of KB (FuzzAnalysis)
# minimising instead of fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-30s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | awk '{print $2}'); do
    echo "== $pkg $f ($t)"
    go test "$pkg" -timeout 0 -run '^$' -fuzz "^$f\$" -fuzztime "$t" -fuzzminimizetime "${FUZZMINIMIZE:-5s}"
  done
done
