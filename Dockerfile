# syntax=docker/dockerfile:1
# Plant Store: build with the dev dependencies, run with the production dependencies only.
# Layers are ordered for the cache (docs/deployment.md, "Docker"): the production
# dependencies come from their own stage, keyed only on package.json and package-lock.json, so a
# source change re-ships the compiled dist/ and its compile cache (a few MB), never node_modules.
# Build arguments and labels come last: a new commit's REVISION changes no layer.

# The production dependencies and their SBOM: rebuilt only when package.json or package-lock.json change.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# No compiler and no install scripts: better-sqlite3 13 ships its Node-API binaries in its package
# (prebuilds/), loads the one for this platform, and declares no build step ("gypfile": false).
# The SBOM lists the production dependencies, from the lock file (the installed tree lacks the dev ones).
# Then what the service never loads: better-sqlite3's SQLite sources, C++ sources and the binaries of
# other platforms (it loads prebuilds/<platform>-<arch>.node), and every package's source maps and type
# declarations. This keeps the application's layers well under 50 MB.
RUN npm sbom --package-lock-only --omit=dev --sbom-format cyclonedx > sbom.cdx.json \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && keep="$(node -p 'process.platform + "-" + process.arch').node" \
 && cd node_modules/better-sqlite3 \
 && test -f "prebuilds/$keep" \
 && rm -rf deps src build binding.gyp \
 && find prebuilds -type f ! -name "$keep" -delete \
 && cd /app \
 && find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete \
 && node -e "require('better-sqlite3')(':memory:').prepare('select 1').get()" \
 && rm -rf /root/.npm

# The compiled service: every dependency (TypeScript), then the sources.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
# `npm run build` bundles dist/ and stamps it with a digest of its sources (what `npm start` checks).
COPY scripts/bundle.mjs scripts/dist-stamp.mjs ./scripts/
COPY src ./src
RUN npm run build

FROM node:24-bookworm-slim AS runtime
# tini as PID 1 (ENTRYPOINT, below), node its child: the first process of a PID namespace ignores the
# signals it has no handler for, so node as PID 1 survives its own abort on a fatal error (a V8 heap
# out of memory) as a mute process; under tini it dies, and the container exits 134 for a restart policy.
# apt-get clean drops the package caches (80 MB where the base has no docker-clean hook), lists too.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
# SHUTDOWN_DELAY_MS and SHUTDOWN_TIMEOUT_MS: a not-ready delay longer than the docs' HAProxy check takes
# to see it (1.5 s), then the drain, both inside Docker's 10 s stop timeout (docs/operating.md,
# "Shutdown and rollouts").
# NODE_COMPILE_CACHE: the V8 code of every module the service loads, compiled at build time (below).
# NODE_OPTIONS and MALLOC_ARENA_MAX size the process to the container's memory limit rather than the
# machine's (docs/deployment.md, "Memory under a limit"): V8's old space at half of the limit (Node reads
# the cgroup's limit; half the machine's memory without a limit), its young generation at 1 MiB
# semi-spaces (V8 grows them to 16 MiB each under a burst, and keeps the pages), and glibc's malloc at
# 2 arenas (it makes up to 8 per core, each a 64 MiB reservation that fills and stays) with allocations
# of 16 KiB and more (the default BODY_LIMIT: a request read at the body limit) mapped on their own and
# given back when freed, rather than left as holes in malloc's heap that no later request fills; a
# larger threshold keeps more memory after a burst.
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-old-space-size-percentage=50 --max-semi-space-size=1" \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=16384 \
    HOST=0.0.0.0 \
    PORT=3000 \
    METRICS_PORT=9464 \
    SHUTDOWN_DELAY_MS=2000 \
    SHUTDOWN_TIMEOUT_MS=7000 \
    NODE_COMPILE_CACHE=/app/.node-compile-cache
WORKDIR /app
# /data: where a SQLite volume is mounted (below), owned by the runtime user (a new named volume takes
# this owner); the compile cache, written by that user at build time (below).
RUN mkdir /data "$NODE_COMPILE_CACHE" && chown node:node /data "$NODE_COMPILE_CACHE"
COPY --chown=root:root LICENSE package.json ./
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=deps --chown=root:root /app/sbom.cdx.json ./
COPY --from=build --chown=root:root /app/dist ./dist
# The commands on the PATH: `docker exec <container> plant-store backup …` (docs/production.md).
RUN ln -s /app/dist/commands/plant-store.js /usr/local/bin/plant-store
# Warms the compile cache: one start of the service (memory store, metrics on, a throwaway token,
# ephemeral ports), stopped with SIGINT once it answers; Node writes the cache at exit. Node keeps one
# cache per uid, so it is warmed as the node user (1000), who runs the service. At run time the cache
# is read; a read-only root filesystem only stops new entries (modules loaded later, e.g. a store's
# driver) from being added; a stale entry is recompiled, never used.
USER node
RUN API_TOKENS=compile-cache-warm-up PORT=0 HOST=127.0.0.1 METRICS_PORT=0 node -e " \
      const { spawn } = require('node:child_process'); \
      const child = spawn(process.execPath, ['dist/server.js'], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LOG_LEVEL: 'info' } }); \
      child.stdout.on('data', (d) => { const m = /Server listening at (http:[^\"]+)/.exec(String(d)); if (m) fetch(m[1] + '/livez').then(() => child.kill('SIGINT')) }); \
      child.on('exit', (code) => process.exit(code ?? 1)); \
      setTimeout(() => { child.kill('SIGKILL'); process.exit(1) }, 30000).unref()" \
 && test -n "$(find "$NODE_COMPILE_CACHE" -type f | head -1)"
EXPOSE 3000
# Prometheus metrics (GET /metrics, no token): publish it only to the monitoring network. METRICS_PORT= turns it off.
EXPOSE 9464
# No anonymous VOLUME: the memory and PostgreSQL stores write nothing. The SQLite store needs a
# directory the node user can write: mount one, e.g. -v plant-data:/data -e DATABASE_URL=sqlite:/data/plants.db
# (docs/deployment.md).
# No curl in the image, and no second node: the probe runs in the container's cgroup, and a node
# started every 10 s (about 10 MiB of its own memory) pushed a 96 MiB container under load past its
# limit. bash's /dev/tcp sends one HTTP/1.0 GET /livez; healthy when the status line says 200.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT:-3000} && printf 'GET /livez HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q '^HTTP/1\\.[01] 200 '"]
# Exec form: tini passes SIGTERM (graceful shutdown) and SIGHUP (tokens reload) to node, and exits with its status.
ENTRYPOINT ["tini", "--"]
CMD ["node", "dist/server.js"]
# OCI annotations, last so that a new REVISION rebuilds no layer: where the image comes from, which
# version, under which licence. Override with --build-arg (CI passes the commit); VERSION follows
# package.json's "version".
ARG VERSION=1.0.0
ARG REVISION=
ARG SOURCE=
LABEL org.opencontainers.image.title="plant-store" \
      org.opencontainers.image.description="Plant Store: a small HTTP service that keeps plants and exposes POST /plants" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.source="$SOURCE" \
      org.opencontainers.image.licenses="MIT"
