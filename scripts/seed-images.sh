#!/usr/bin/env bash
# Seeds the local base images that stand in for the official ones (this machine has no registry):
# debootstrap minbase -> docker import -> docker build layers from images/*.Dockerfile.
# Each image carries the label ca.sandbox.base.recipe, a hash of its Dockerfile, its `# pack:` line
# and its parent image's id: an image whose recipe (or parent) changed is rebuilt, one that matches
# is kept, so a second run costs a few `docker image inspect`s. Each image also carries
# ca.sandbox.toolchain (the versions of its tools, probed after the build), which `create` reports.
# Needs root, debootstrap, npm (the node image's packs) and a running Docker engine
# (scripts/install-host.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mirror=${CA_SANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
recipe_label=ca.sandbox.base.recipe
toolchain_label=ca.sandbox.toolchain
log() { printf '[seed-images] %s\n' "$*"; }
have() { docker image inspect "$1" >/dev/null 2>&1; }
label() { docker image inspect -f "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true; }

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

# `name version` per tool found on PATH, comma-joined as name=version (the ca.sandbox.toolchain
# format that @ca-sandbox/build writes for dependency images too).
probe='for t in node npm corepack pnpm yarn python3 pip uv go gcc; do
  command -v "$t" >/dev/null 2>&1 || continue
  case $t in
    go) v=$(go env GOVERSION 2>/dev/null | sed s/^go//) ;;
    pip) v=$(python3 -m pip --version 2>/dev/null | cut -d" " -f2) ;;
    python3) v=$(python3 -c "import platform; print(platform.python_version())") ;;
    gcc) v=$(gcc -dumpfullversion 2>/dev/null) ;;
    *) v=$("$t" --version 2>/dev/null | head -n 1 | sed -e "s/^v//" -e "s/^[^0-9]*//" -e "s/ .*//") ;;
  esac
  [ -n "$v" ] && printf "%s=%s," "$t" "$v"
done'

# Order matters: each layer builds FROM the one before it.
for name in debian git node python go gateway; do
  tag="ca-sbx-base:$name"
  file="$here/images/$name.Dockerfile"
  parent=$(awk '$1 == "FROM" { print $2; exit }' "$file")
  packs=$(sed -n 's/^# pack: //p' "$file")
  recipe=$({ cat "$file"; docker image inspect -f '{{.Id}}' "$parent"; } | sha256sum | cut -c1-24)
  if have "$tag" && [ "$(label "$tag" "$recipe_label")" = "$recipe" ]; then
    log "$tag present (recipe $recipe)"
    continue
  fi
  log "building $tag (recipe $recipe)"
  context=$(mktemp -d /var/tmp/ca-sbx-seed.XXXXXX)
  trap 'rm -rf "$context"' EXIT
  cp "$file" "$context/Dockerfile"
  mkdir "$context/packs"
  # The registry's tarballs, integrity-checked by npm against the registry's metadata.
  for spec in $packs; do
    (cd "$context/packs" && npm pack --silent "$spec" >/dev/null)
  done
  docker build -q --label "$recipe_label=$recipe" -t "$tag" "$context" >/dev/null
  rm -rf "$context"
  trap - EXIT
  toolchain=$(docker run --rm --network none --user 1000:1000 "$tag" sh -c "$probe")
  toolchain=${toolchain%,}
  printf 'FROM %s\nLABEL %s="%s"\n' "$tag" "$toolchain_label" "$toolchain" |
    docker build -q -t "$tag" - >/dev/null
  log "built $tag: ${toolchain:-no toolchain}"
done
log "done"
