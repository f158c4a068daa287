#!/usr/bin/env bash
# Installs Debian's HAProxy (2.6 on bookworm) for the fleet test
# (internal/fleet), only when haproxy is not on PATH. Idempotent: CI runs it
# on a fresh machine, a developer's second run does nothing.
set -euo pipefail

if command -v haproxy >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "haproxy.sh: haproxy is missing and apt-get is not available; install HAProxy 2.6 or later by hand" >&2
  exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  sudo=(sudo)
fi
echo "haproxy.sh: installing haproxy with apt-get"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends haproxy
haproxy -v | head -1
