#!/usr/bin/env bash
# Measures the resident memory of one `toolsvc serve` on SQLite, idle and
# under load, for the chart's resource requests (docs/OPERATIONS.md,
# Resources). Loopback only; everything in a temporary directory.
#
#   deploy/measure-rss.sh [TOOLSVC_BINARY]     (default: bin/image/toolsvc, from make image)
#
# Idle: VmRSS 15 s after the server listens. Load: the bench module's load
# tool, 64 callers over gRPC, REST and MCP, first add-memory (writes, each
# answered once its audit record is durable), then search-memories over
# what was written; VmHWM (peak RSS) and VmRSS after.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/image/toolsvc}
dur=${DURATION:-10s}
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

mkdir -p "$work/knowledge"
(cd bench && go build -o "$work/toolsvc-bench" ./cmd/toolsvc-bench)

# 64 API keys, each its own principal, so per-principal rate limits do
# not refuse the load.
: > "$work/keys"
echo "api_keys:" > "$work/auth.yaml"
for i in $(seq 1 64); do
  key=rss_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  echo "$key" >> "$work/keys"
  printf '  - key_sha256: %s\n    subject: rss-%02d\n    tenant: acme\n    permissions: ["*"]\n    identifiers: {user_id: u0, project_id: p0}\n' \
    "$(printf %s "$key" | sha256sum | cut -d' ' -f1)" "$i" >> "$work/auth.yaml"
done
for i in $(seq 1 200); do
  echo "{\"content\": \"Deployment note $i: roll the fleet one replica at a time; drain $i seconds, then restart replica $((i % 3)).\"}"
done > "$work/add.jsonl"

"$bin" serve --auth-file "$work/auth.yaml" --db "$work/toolsvc.db" --knowledge-dir "$work/knowledge" \
  --http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 --log-level warn --log-format json 2> "$work/log" &
pid=$!
# The listen lines are logged at info; at warn, find the ports in /proc.
for _ in $(seq 1 240); do
  ports=$(ss -Hltnp 2>/dev/null | grep "pid=$pid," | awk '{print $4}' | sed 's/.*://' || true)
  [ "$(echo "$ports" | grep -c .)" -ge 2 ] && break
  sleep 0.5
done
http="" grpc=""
for p in $ports; do
  if curl -fsS "http://127.0.0.1:$p/healthz" >/dev/null 2>&1; then http=$p; else grpc=$p; fi
done
[ -n "$http" ] && [ -n "$grpc" ] || { echo "server did not listen:"; cat "$work/log"; exit 1; }

rss() { awk -v k="$1:" '$1 == k {print $2 " " $3}' "/proc/$pid/status"; }
sleep 15
echo "idle:          VmRSS $(rss VmRSS)"

load() { # tool, args flags...
  local tool=$1; shift
  "$work/toolsvc-bench" --transport grpc,rest,mcp-stateful --tool "$tool" "$@" \
    --grpc-addr "127.0.0.1:$grpc" --http "http://127.0.0.1:$http" --api-keys-file "$work/keys" \
    --concurrency 64 --duration "$dur" --warmup 2s --pid "$pid" > "$work/$tool.md"
  grep -E '^\| *(grpc|rest|mcp)' "$work/$tool.md" | head -3 || true
}
load add-memory --args-file "$work/add.jsonl"
echo "after writes:  VmRSS $(rss VmRSS), peak VmHWM $(rss VmHWM)"
load search-memories --args '{"query": "roll the fleet drain"}'
echo "after search:  VmRSS $(rss VmRSS), peak VmHWM $(rss VmHWM)"
sleep 15
echo "idle again:    VmRSS $(rss VmRSS)"
