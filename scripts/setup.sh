#!/usr/bin/env bash
# Installs the Debian 12 packages kiln builds with, where missing, and any
# more named as arguments (the tests add clang for the fuzz targets).
set -euo pipefail

packages=(cmake ninja-build g++ pkg-config libabsl-dev libz3-dev libgtest-dev libgmock-dev
          xtensor-dev nlohmann-json3-dev libpcre2-dev libutf8proc-dev libsentencepiece-dev "$@")
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "kiln setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
