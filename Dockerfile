# syntax=docker/dockerfile:1
# Plant Store: build with the dev dependencies, run with the production dependencies only.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No compiler and no install scripts: better-sqlite3 13 ships its Node-API binaries in its package
# (prebuilds/) and loads the one for this platform. Its implicit `node-gyp rebuild` would compile
# nothing, yet still needs python3 and make; no other dependency has an install step.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# `npm run build` stamps dist/ with a digest of its sources (what `npm start` checks).
COPY scripts/dist-stamp.mjs ./scripts/
# The SBOM lists the production dependencies; npm sbom reads the whole tree, so it runs before the prune.
RUN npm run build \
 && npm sbom --omit=dev --sbom-format cyclonedx > sbom.cdx.json \
 && npm prune --omit=dev --no-audit --no-fund
# What the service never loads: better-sqlite3's SQLite sources, C++ sources and the binaries of other
# platforms (it loads prebuilds/<platform>-<arch>.node), and every package's source maps and type
# declarations. This keeps the application's layers well under 50 MB.
RUN keep="$(node -p 'process.platform + "-" + process.arch').node" \
 && cd node_modules/better-sqlite3 \
 && test -f "prebuilds/$keep" \
 && rm -rf deps src build binding.gyp \
 && find prebuilds -type f ! -name "$keep" -delete \
 && cd /app \
 && find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete \
 && node -e "require('better-sqlite3')(':memory:').prepare('select 1').get()"

FROM node:24-bookworm-slim AS runtime
# OCI annotations: where the image comes from, which version, under which licence. Override with
# --build-arg (CI passes the commit); VERSION follows package.json's "version".
ARG VERSION=1.0.0
ARG REVISION=
ARG SOURCE=
LABEL org.opencontainers.image.title="plant-store" \
      org.opencontainers.image.description="Plant Store: a small HTTP service that keeps plants and exposes POST /plants" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.source="$SOURCE" \
      org.opencontainers.image.licenses="MIT"
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    METRICS_PORT=9464
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json /app/sbom.cdx.json ./
COPY --chown=root:root LICENSE ./
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
# A place for the SQLite store (DATABASE_URL=sqlite:/data/plants.db), owned by the runtime user.
RUN mkdir /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 3000
# Prometheus metrics (GET /metrics, no token): publish it only to the monitoring network. METRICS_PORT= turns it off.
EXPOSE 9464
# No curl in the image: Node's own fetch probes the liveness route.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/livez').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Exec form: node itself is PID 1 and gets SIGTERM, which it handles (graceful shutdown); it starts no children.
CMD ["node", "dist/server.js"]
