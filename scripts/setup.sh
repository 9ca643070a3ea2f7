#!/usr/bin/env bash
# One command on a fresh Debian machine (as root): installs Node 22, Docker's engine, gVisor and
# the rest, seeds the local base images, builds ca-sandbox, links the `ca-sandbox` bin onto PATH,
# then runs the main job: a sandbox from the sample repo, a command inside it, and teardown.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-host.sh
hash -r
bash scripts/seed-images.sh
pnpm install --frozen-lockfile
pnpm build
ln -sf "$PWD/packages/cli/bin/ca-sandbox.js" /usr/local/bin/ca-sandbox

# This machine has no registry: point the builders at the local stand-ins for the official images.
export CA_SANDBOX_BASE_IMAGE_NODE=${CA_SANDBOX_BASE_IMAGE_NODE:-ca-sbx-base:node}
export CA_SANDBOX_BASE_IMAGE_PYTHON=${CA_SANDBOX_BASE_IMAGE_PYTHON:-ca-sbx-base:python}
export CA_SANDBOX_BASE_IMAGE_GO=${CA_SANDBOX_BASE_IMAGE_GO:-ca-sbx-base:go}
export CA_SANDBOX_BASE_IMAGE_PLAIN=${CA_SANDBOX_BASE_IMAGE_PLAIN:-ca-sbx-base:debian}
# Behind a TLS-intercepting proxy, dependency installs need the host's CA bundle.
if [ -z "${CA_SANDBOX_CA_CERTS:-}" ]; then
  for bundle in "${NODE_EXTRA_CA_CERTS:-}" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
    if [ -n "$bundle" ] && [ -f "$bundle" ]; then export CA_SANDBOX_CA_CERTS=$bundle; break; fi
  done
fi

echo
echo "== main job: a sandbox from examples/hello-node"
ca-sandbox doctor
id=$(ca-sandbox create examples/hello-node --network clone-then-cut --quiet)
trap 'ca-sandbox destroy "$id" >/dev/null' EXIT
ca-sandbox verify "$id"
ca-sandbox exec "$id" -- node index.js
ca-sandbox destroy "$id"
trap - EXIT
echo
echo "ca-sandbox is ready: try 'ca-sandbox run examples/hello-node --network clone-then-cut'"
