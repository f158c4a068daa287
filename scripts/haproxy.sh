#!/usr/bin/env bash
# Installs HAProxy (Debian's package, 2.6 on bookworm) when it is missing:
# the tests run a real HAProxy on loopback — its default HTTP health check in
# front of one replica (internal/tests/reliability TestHAProxyHealthCheck) and the
# fleet test's round-robin balancer over three (TestFleetRollingRestart,
# make fleet). Idempotent: does nothing when haproxy is on PATH. HAProxy is
# not started here; each test runs its own from a configuration it writes.
set -euo pipefail

if command -v haproxy >/dev/null 2>&1; then
  echo "haproxy: $(haproxy -v | head -n1)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "haproxy.sh: haproxy is missing and apt-get is not available; install HAProxy 2.6 or later by hand" >&2
  exit 1
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
