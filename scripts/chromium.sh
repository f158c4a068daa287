#!/usr/bin/env bash
# Installs Debian's Chromium for the browser test of the /ui console
# (internal/rest/console/browser_test.go drives it with playwright-core), only
# when /usr/bin/chromium is absent. Never downloads a browser build of its own.
set -euo pipefail

if [[ -x /usr/bin/chromium ]]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium.sh: /usr/bin/chromium is missing and apt-get is not available; install Chromium by hand" >&2
  exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  sudo=(sudo)
fi
echo "chromium.sh: installing chromium with apt-get"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium
/usr/bin/chromium --version
