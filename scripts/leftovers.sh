#!/usr/bin/env bash
# Lists (and with --remove, removes) every container, volume and network labeled ca.sandbox=1,
# plus host firewall rules tagged by the allowlist policy. Exit 1 when something was found.
set -uo pipefail
remove=0
[ "${1:-}" = "--remove" ] && remove=1
found=0
filter=label=ca.sandbox=1
for kind in container volume network; do
  case $kind in
    container) list=$(docker ps -a -q --filter "$filter") ;;
    volume) list=$(docker volume ls -q --filter "$filter") ;;
    network) list=$(docker network ls -q --filter "$filter") ;;
  esac
  for object in $list; do
    found=1
    echo "leftover $kind $object"
    if [ $remove = 1 ]; then
      case $kind in
        container) docker rm -f "$object" >/dev/null ;;
        volume) docker volume rm -f "$object" >/dev/null ;;
        network) docker network rm "$object" >/dev/null ;;
      esac
    fi
  done
done
if command -v iptables >/dev/null 2>&1; then
  for chain in DOCKER-USER INPUT FORWARD; do
    iptables -S "$chain" 2>/dev/null | grep -- '--comment "\?ca-sandbox:' | while read -r rule; do
      echo "leftover firewall rule: $rule"
      if [ $remove = 1 ]; then
        # shellcheck disable=SC2086
        eval "iptables ${rule/-A /-D }" || true
      fi
    done
    iptables -S "$chain" 2>/dev/null | grep -q -- '--comment "\?ca-sandbox:' && found=1
  done
fi
exit $found
