#!/usr/bin/env bash
# Runs every Fuzz target of the module for the given time each (default 10s).
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-10s}
grep -rl --include='*_test.go' '^func Fuzz' internal cmd 2>/dev/null | xargs -n1 dirname | sort -u | while read -r dir; do
  for f in $(grep -h '^func Fuzz' "$dir"/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do
    echo "fuzz: $dir $f ($t)"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$t" "./$dir"
  done
done
