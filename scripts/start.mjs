// `npm start`: builds dist/ only when the sources changed since it was last built
// (scripts/dist-stamp.mjs), then runs the service in this same process, so that signals sent to
// it (SIGTERM, SIGINT, SIGHUP) reach the service's own handlers. A start with nothing changed
// costs a digest of the sources (a few milliseconds) instead of a TypeScript build (seconds).
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { distStatus, ROOT, writeStamp } from './dist-stamp.mjs'

const { current, digest } = distStatus()
if (!current) {
  process.stderr.write('plant-store: dist/ is not built from the current sources: building (npm run build)\n')
  // TypeScript 7's compiler (package.json's @typescript/native); `typescript` is the TypeScript 6 API for the tools.
  const tsc = join(dirname(createRequire(import.meta.url).resolve('@typescript/native/package.json')), 'bin', 'tsc')
  for (const step of [[tsc, '-p', 'tsconfig.build.json'], [join(ROOT, 'scripts', 'bundle.mjs')]]) {
    const build = spawnSync(process.execPath, step, { cwd: ROOT, stdio: 'inherit' })
    if (build.status !== 0) {
      process.stderr.write(`plant-store: the build failed (${build.error?.message ?? `status ${build.status ?? build.signal}`}); not starting\n`)
      process.exit(1)
    }
  }
  // The digest taken before the build: a file changed during it makes the next start build again.
  writeStamp(digest)
}
await import(pathToFileURL(join(ROOT, 'dist', 'server.js')).href)
