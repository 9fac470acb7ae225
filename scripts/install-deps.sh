#!/usr/bin/env bash
# Installs every Debian package qserve's build and tests need. Non-interactive and
# idempotent: when everything is present it only checks and returns.
set -euo pipefail

PKGS=(
  build-essential pkg-config clang
  libmicrohttpd-dev libcjson-dev libyaml-dev libpcre2-dev libcurl4-openssl-dev
  libcmocka-dev libunistring-dev libssl-dev
  libopenmpi-dev openmpi-bin
  nodejs curl xz-utils
  prometheus
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# nodesource's nodejs bundles npm; Debian's splits it out.
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# Node packages used by tests (the openai client, the @huggingface/hub client) and golden
# generators live in tests/node; installed when any dependency of its package.json is missing.
node_deps_missing() {
  node -e 'const p=require("./tests/node/package.json"),fs=require("fs");
    process.exit(Object.keys(p.dependencies||{}).every(d=>fs.existsSync("tests/node/node_modules/"+d))?1:0)'
}
if [ -f tests/node/package.json ] && node_deps_missing; then
  (cd tests/node && npm install --no-audit --no-fund --loglevel=error)
fi
