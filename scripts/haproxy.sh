#!/usr/bin/env bash
# Installs HAProxy (Debian's package) when it is missing: the tests run a
# real HAProxy with its default HTTP health check in front of a toolsvc
# replica (internal/reliability TestHAProxyHealthCheck). Idempotent: does
# nothing when haproxy is on PATH. HAProxy is not started here; each test
# runs its own, on loopback, from a configuration in its temp dir.
set -euo pipefail

if command -v haproxy >/dev/null 2>&1; then
  echo "haproxy: $(haproxy -v | head -n1)"
  exit 0
fi
echo "haproxy: installing"
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends haproxy >/dev/null
# The package may start its own service; the tests do not use it.
if command -v systemctl >/dev/null 2>&1; then $SUDO systemctl stop haproxy >/dev/null 2>&1 || true; fi
echo "haproxy: $(haproxy -v | head -n1)"
