#!/usr/bin/env bash
# Installs those of the Debian/Ubuntu packages named that are not installed
# (with sudo when not root): the one way the scripts install what they need.
#   scripts/apt_install.sh WHO PACKAGE...   (WHO names the caller in the message)
set -euo pipefail
who=$1
shift
missing=()
# dpkg-query -W, not dpkg -s: with a second architecture (arm64 for
# scripts/test_kernels_arm64.sh) dpkg -s refuses a name installed for both.
for p in "$@"; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "$who: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq || true
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
