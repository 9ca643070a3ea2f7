#!/usr/bin/env bash
# What the tests need beyond ca-sandbox's own host set-up (install-host.sh): Debian's Chromium,
# which the HTML report's test drives headless through playwright-core (no browser download: the
# npm registry has no Chromium build for this machine's use, and Debian's is what users have).
# Idempotent. Needs root.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "[install-test-tools] chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}')"
  exit 0
fi
echo "[install-test-tools] apt-get install chromium"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
/usr/bin/chromium --version
