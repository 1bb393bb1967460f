# syntax=docker/dockerfile:1
# Plant Store: build with the toolchain, run with production dependencies only.

FROM node:24-bookworm-slim AS build
# better-sqlite3 compiles from source when no prebuilt binary can be fetched.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# `npm run build` stamps dist/ with a digest of its sources (what `npm start` checks).
COPY scripts/dist-stamp.mjs ./scripts/
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    METRICS_PORT=9464
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json ./
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
