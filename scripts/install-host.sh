#!/usr/bin/env bash
# Installs and starts what ca-sandbox needs on a Debian host: Node >= 22.12, Docker's engine
# (Debian's docker.io), iptables, debootstrap, git, gVisor (runsc). Idempotent: every step is
# skipped when already done, so it is safe to run twice. Needs root.
set -euo pipefail

log() { printf '[install-host] %s\n' "$*"; }

if [ "$(id -u)" != 0 ]; then
  echo "install-host: run as root (it installs Debian packages and starts dockerd)" >&2
  exit 3
fi

node_ok() {
  command -v node >/dev/null 2>&1 &&
    node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=12)?0:1)'
}
if ! node_ok; then
  log "node $(node --version 2>/dev/null || echo none) is older than 22.12: installing node@22 from npm"
  npm i -g --prefix /usr/local node@22 >/dev/null
  hash -r
fi
node_ok || { echo "install-host: node >= 22.12 is still not first on PATH ($(command -v node))" >&2; exit 3; }
log "node $(node --version)"

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v runsc >/dev/null 2>&1 || missing+=(runsc)
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# gVisor only works here for containers without a network, so the runtime is registered with
# --network=none; boxes that need a network (allowlist) are refused under runsc by our code.
daemon_json=/etc/docker/daemon.json
want_json='{
  "runtimes": {
    "runsc": { "path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"] }
  }
}'
mkdir -p /etc/docker
restart=0
if [ ! -f "$daemon_json" ] || ! grep -q '"runsc"' "$daemon_json"; then
  if [ -f "$daemon_json" ] && [ -s "$daemon_json" ]; then
    node -e '
      const fs=require("fs");const p=process.argv[1];const j=JSON.parse(fs.readFileSync(p,"utf8"));
      j.runtimes={...(j.runtimes||{}),runsc:{path:"/usr/bin/runsc",runtimeArgs:["--network=none"]}};
      fs.writeFileSync(p,JSON.stringify(j,null,2)+"\n");' "$daemon_json"
  else
    printf '%s\n' "$want_json" >"$daemon_json"
  fi
  restart=1
  log "registered runsc in $daemon_json"
fi

docker_up() { timeout 10 docker info >/dev/null 2>&1; }

if docker_up && [ "$restart" = 1 ]; then
  log "reloading dockerd for the new runtime"
  pkill -HUP -x dockerd || true
  sleep 1
fi

if ! docker_up; then
  log "starting dockerd in the background (log: /var/log/ca-sandbox-dockerd.log)"
  # A stale pid file from a killed session stops dockerd from starting.
  if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    rm -f /var/run/docker.pid
  fi
  if [ -f /run/containerd/containerd.pid ] && ! kill -0 "$(cat /run/containerd/containerd.pid)" 2>/dev/null; then
    rm -f /run/containerd/containerd.pid
  fi
  # Only the simple command goes to the background: backgrounding the whole `pgrep || dockerd`
  # list left a subshell alive as dockerd's parent, holding the caller's stdout open, so
  # `install-host.sh | tail` never ended.
  if ! pgrep -x dockerd >/dev/null; then
    setsid nohup dockerd >/var/log/ca-sandbox-dockerd.log 2>&1 </dev/null &
  fi
  for _ in $(seq 1 60); do
    docker_up && break
    sleep 1
  done
fi
if ! docker_up; then
  echo "install-host: Docker is not available after 60 s; see /var/log/ca-sandbox-dockerd.log" >&2
  tail -n 20 /var/log/ca-sandbox-dockerd.log >&2 || true
  exit 3
fi
log "docker $(docker version --format '{{.Server.Version}}') runtimes: $(docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}')"

corepack_pnpm() {
  command -v pnpm >/dev/null 2>&1 && [ "$(pnpm --version 2>/dev/null)" = "12.4.2" ]
}
if ! corepack_pnpm; then
  log "installing pnpm@12.4.2"
  npm i -g --prefix /usr/local pnpm@12.4.2 >/dev/null
  hash -r
fi
log "pnpm $(pnpm --version)"
