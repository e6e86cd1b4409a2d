#!/usr/bin/env bash
# Makes sure the Debian packages the tests need are installed: prometheus-pushgateway (a real
# Pushgateway for the metrics tests), prometheus (for promtool, which tests the alerting rules),
# chromium (a headless browser that opens the -o html report) and redis-server (the cache Argo CD's
# application-controller needs, in test/controllers). Installs what is missing when the machine can
# (root, or password-less sudo); otherwise says how.
set -euo pipefail

declare -A packages=([prometheus-pushgateway]=prometheus-pushgateway [promtool]=prometheus [chromium]=chromium [redis-server]=redis-server)
missing=()
for cmd in "${!packages[@]}"; do
  command -v "$cmd" >/dev/null || missing+=("${packages[$cmd]}")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "hack/debian-tools.sh: missing Debian packages: ${missing[*]}; install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "hack/debian-tools.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt_install() { "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/debian-tools.log 2>&1; }
if ! apt_install; then
  # A fresh machine may have no package lists yet.
  "${sudo[@]}" apt-get update >>/tmp/debian-tools.log 2>&1 || true
  apt_install || { cat /tmp/debian-tools.log >&2; echo "hack/debian-tools.sh: apt-get install ${missing[*]} failed" >&2; exit 1; }
fi
