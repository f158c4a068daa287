#!/usr/bin/env bash
# Runs every Fuzz target of the module for the given time each (default 10s).
# A real finding always writes a failing input under testdata/fuzz and fails
# the run. Go's fuzz coordinator can also report "context deadline exceeded"
# when the time budget ends while a worker is busy, with no failing input:
# that harness timeout is retried (twice at most) and fails only if it persists.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-10s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run_target() { # dir target
  go test -run '^$' -fuzz "^$2\$" -fuzztime "$t" "./$1" >"$log" 2>&1
}

grep -rl --include='*_test.go' '^func Fuzz' internal cmd 2>/dev/null | xargs -n1 dirname | sort -u | while read -r dir; do
  for f in $(grep -h '^func Fuzz' "$dir"/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do
    echo "fuzz: $dir $f ($t)"
    if run_target "$dir" "$f"; then
      tail -n 1 "$log"
      continue
    fi
    cat "$log"
    if grep -q 'Failing input written to' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
      exit 1
    fi
    passed=false
    for attempt in 1 2; do
      echo "fuzz: $f: the fuzz harness timed out without a failing input; retry $attempt of 2"
      if run_target "$dir" "$f"; then
        passed=true
        break
      fi
      cat "$log"
      if grep -q 'Failing input written to' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
        exit 1
      fi
    done
    $passed || exit 1
    tail -n 1 "$log"
  done
done
