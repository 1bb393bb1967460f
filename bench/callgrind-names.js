// Names the JIT-compiled frames of a callgrind output: callgrind knows V8's generated code only by
// address ("0x000000000d1c93c0"); node --perf-basic-prof writes /tmp/perf-<pid>.map (start, size,
// name per code object). Rewrites the output file in place, so callgrind_annotate shows JS names.
//   node bench/callgrind-names.js <callgrind.out> </tmp/perf-PID.map>
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export function nameJitFrames (outFile, mapFile) {
  let map
  try { map = readFileSync(mapFile, 'utf8') } catch { return false }
  const ranges = map.split('\n').filter(Boolean).map((line) => {
    const [start, size, ...name] = line.split(' ')
    return { start: parseInt(start, 16), end: parseInt(start, 16) + parseInt(size, 16), name: name.join(' ') }
  }).sort((a, b) => a.start - b.start)
  const lookup = (address) => {
    let lo = 0
    let hi = ranges.length - 1
    let found
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      if (ranges[mid].start <= address) { found = ranges[mid]; lo = mid + 1 } else hi = mid - 1
    }
    return found !== undefined && address < found.end ? found.name : undefined
  }
  const text = readFileSync(outFile, 'utf8').replace(/(\(\d+\) )0x([0-9a-f]{16})\b/g, (whole, id, hex) => {
    const name = lookup(parseInt(hex, 16))
    return name === undefined ? whole : `${id}${name.replace(/\s+/g, '_')} [0x${hex}]`
  })
  writeFileSync(outFile, text)
  return true
}

if (process.argv[1] === fileURLToPath(import.meta.url)) nameJitFrames(process.argv[2], process.argv[3])
