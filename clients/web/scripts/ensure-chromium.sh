#!/usr/bin/env bash
# Installs Debian's chromium (the browser the web client's Playwright tests drive) when
# /usr/bin/chromium is missing. Idempotent; needs root (CI and the dev machines run as root).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
echo "ensure-chromium: installing Debian's chromium" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version >&2
