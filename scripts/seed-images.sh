#!/usr/bin/env bash
# Seeds the local base images that stand in for the official ones (this machine has no registry):
# debootstrap minbase -> docker import -> docker build layers from images/*.Dockerfile.
# An image that already exists is skipped, so a second run costs a few `docker image inspect`s.
# Needs root, debootstrap and a running Docker engine (scripts/install-host.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mirror=${CA_SANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { printf '[seed-images] %s\n' "$*"; }
have() { docker image inspect "$1" >/dev/null 2>&1; }

if ! have ca-sbx-base:bookworm-minbase; then
  dir=$(mktemp -d /var/tmp/ca-sbx-minbase.XXXXXX)
  trap 'rm -rf "$dir"' EXIT
  log "debootstrap --variant=minbase bookworm (a minute or so)"
  debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.log" 2>&1 ||
    { tail -n 20 "$dir.log" >&2; exit 1; }
  rm -f "$dir.log"
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  tar -C "$dir" -c . | docker import - ca-sbx-base:bookworm-minbase >/dev/null
  rm -rf "$dir"
  trap - EXIT
  log "imported ca-sbx-base:bookworm-minbase"
fi

# Order matters: each layer builds FROM the one before it.
for name in debian git node python go gateway; do
  tag="ca-sbx-base:$name"
  if have "$tag"; then
    log "$tag present"
    continue
  fi
  log "building $tag"
  docker build -q -t "$tag" -f "$here/images/$name.Dockerfile" "$here/images" >/dev/null
done
log "done"
