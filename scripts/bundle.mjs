// Bundles tsc's output into dist/server.js, dist/commands/plant-store.js and the chunks they import: at
// start Node resolves and reads a few files instead of some 700 modules. server.js stays a small entry that
// turns the compile cache on before it imports the rest.
import { chmodSync } from 'node:fs'
import { build } from 'esbuild'

await build({
  entryPoints: ['dist/server.js', 'dist/commands/plant-store.js'],
  outdir: 'dist',
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  // Left in node_modules: what loads only when configured, native code, and Swagger UI, which serves the
  // files of its own folder.
  external: ['better-sqlite3', 'pg', 'ioredis', '@fastify/rate-limit', '@opentelemetry/*', '@fastify/otel', 'prom-client',
    '@fastify/swagger-ui'],
  // CommonJS packages inlined into ES modules still call require() for Node's built-ins.
  banner: { js: 'import { createRequire } from \'node:module\'; const require = createRequire(import.meta.url);' },
  logLevel: 'warning'
})
// The commands' entry is a bin (package.json): executable, run by its #! line.
chmodSync('dist/commands/plant-store.js', 0o755)
