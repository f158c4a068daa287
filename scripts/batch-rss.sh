#!/usr/bin/env bash
# Measures what a hostile MCP batch does to the resident set of a real
# `toolsvc serve` (docs/RELIABILITY.md). Usage:
#
#   scripts/batch-rss.sh [BINARY] [CALLS]
#
# BINARY defaults to a build of ./cmd/toolsvc, CALLS to 15000. It starts
# the binary in development mode on a fresh SQLite file and free loopback
# ports, opens a 2025-03-26 session, reads VmRSS, sends one batch of CALLS
# tools/call get-sync-status over HTTP, then reads VmRSS right after the
# answer and 30 s later; then it sends CALLS/100 batches of 100 calls (the
# same calls within the default bound) and reads VmRSS again, then and
# 30 s later. It prints one line per reading.
set -euo pipefail

bin=${1:-}
calls=${2:-15000}
work=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; wait "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
if [[ -z $bin ]]; then
  bin=$work/toolsvc
  go build -o "$bin" ./cmd/toolsvc
fi

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http=$(port)
grpc=$(port)
"$bin" serve --db "$work/toolsvc.db" --http-addr "127.0.0.1:$http" --grpc-addr "127.0.0.1:$grpc" \
  --knowledge-dir "$work" --log-level error >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$http/readyz" >/dev/null && break
  sleep 0.1
done

rss() { awk '/^VmRSS/ {printf "%.0f MiB", $2/1024}' "/proc/$pid/status"; }
url="http://127.0.0.1:$http/mcp"
hdr=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
sid=$(curl -s -D - -o /dev/null "${hdr[@]}" "$url" \
  -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batch-rss","version":"1"}}}' |
  awk 'tolower($1) == "mcp-session-id:" {print $2}' | tr -d '\r')
hdr+=(-H "Mcp-Session-Id: $sid" -H 'Mcp-Protocol-Version: 2025-03-26')

# batch N writes a batch of N tools/call to $work/batch.
batch() {
  python3 - "$1" >"$work/batch" <<'EOF'
import sys
n = int(sys.argv[1])
print("[" + ",".join('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}' % i for i in range(1, n + 1)) + "]", end="")
EOF
}
post() { curl -s -o "$work/answer" -w '%{http_code} %{size_download}' "${hdr[@]}" "$url" --data-binary "@$work/batch"; }

sleep 3
echo "idle after start:              $(rss)"
batch "$calls"
echo "one batch of $calls calls ($(stat -c %s "$work/batch") bytes): HTTP $(post) bytes answered"
echo "right after the answer:        $(rss)"
sleep 30
echo "30 s later:                    $(rss)"
batch 100
for _ in $(seq $((calls / 100))); do post >/dev/null; done
echo "after $((calls / 100)) batches of 100 calls: $(rss) (last: HTTP $(post) bytes)"
sleep 30
echo "30 s later:                    $(rss)"
