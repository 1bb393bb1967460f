// Whether dist/ was built from the sources as they are now. A digest of every input of the build
// (src/**, tsconfig.json, tsconfig.build.json, package-lock.json: a new TypeScript or @types can
// change the output) is written to dist/.build-stamp after each build; dist/ is current when the
// stamp equals the digest of the inputs now and dist/server.js exists. Contents, not mtimes: a
// checkout or a copy that touches files without changing them does not force a rebuild.
//   node scripts/dist-stamp.mjs     writes the stamp for the sources as they are (after `tsc`)
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = dirname(dirname(fileURLToPath(import.meta.url)))
const TOP_LEVEL_INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json']
const stampFile = (root) => join(root, 'dist', '.build-stamp')

function filesUnder (dir) {
  const files = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) files.push(...filesUnder(path))
    else files.push(path)
  }
  return files
}

/** SHA-256 over the build's inputs: each one's path and contents, in a fixed order. */
export function sourceDigest (root = ROOT) {
  const hash = createHash('sha256')
  const inputs = [...filesUnder(join(root, 'src')), ...TOP_LEVEL_INPUTS.map((name) => join(root, name)).filter((path) => existsSync(path))]
  for (const path of inputs.map((p) => relative(root, p).split('\\').join('/')).sort()) {
    hash.update(path).update('\0').update(readFileSync(join(root, path))).update('\0')
  }
  return hash.digest('hex')
}

/** { current, digest }: whether dist/ was built from exactly these sources. */
export function distStatus (root = ROOT) {
  const digest = sourceDigest(root)
  let stamp
  try { stamp = readFileSync(stampFile(root), 'utf8').trim() } catch { stamp = undefined }
  return { current: stamp === digest && existsSync(join(root, 'dist', 'server.js')), digest }
}

export function writeStamp (digest = sourceDigest(), root = ROOT) {
  writeFileSync(stampFile(root), `${digest}\n`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeStamp()
