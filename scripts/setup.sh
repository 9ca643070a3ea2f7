#!/usr/bin/env bash
# One command on a fresh Debian machine (as root): installs Node 22, Docker's engine, gVisor and
# the rest, seeds the local base images, builds ca-sandbox, links the `ca-sandbox` bin onto PATH,
# then runs the main job: a sandbox from the sample repo, a command inside it, and teardown.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-host.sh
hash -r
# The tests' own need (the HTML report's browser test), so that `pnpm test` runs after this alone.
bash scripts/install-test-tools.sh
bash scripts/seed-images.sh
pnpm install --frozen-lockfile
pnpm build
ln -sf "$PWD/packages/cli/bin/ca-sandbox.js" /usr/local/bin/ca-sandbox

# The settings live in ca-sandbox's configuration file, so they hold in every new shell, for the
# MCP server and for the plugin: the local stand-ins for the official base images (this machine has
# no registry), and the host's CA bundle for installs behind a TLS-intercepting proxy.
echo "== configuration: $(node scripts/write-config.mjs)"

echo
echo "== main job: a sandbox from examples/hello-node"
ca-sandbox doctor
ca-sandbox config
id=$(ca-sandbox create examples/hello-node --network clone-then-cut --quiet)
trap 'ca-sandbox destroy "$id" >/dev/null' EXIT
ca-sandbox verify "$id"
ca-sandbox exec "$id" -- node index.js
ca-sandbox destroy "$id"
trap - EXIT
echo
echo "ca-sandbox is ready: try 'ca-sandbox run examples/hello-node --network clone-then-cut'"
