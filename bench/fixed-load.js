// A fixed number of requests, for bench/instructions.js: the same requests as bench/unique-ids.lua
// (a valid POST /plants with a new id, a valid bearer token) over keep-alive connections, each
// connection sending its next request when the previous answer has arrived. Prints one
// `BENCH_RESULT {json}` line. Usage: node bench/fixed-load.js <port> <requests> <connections>
import { Agent, request } from 'node:http'

const [port, total, connections] = process.argv.slice(2).map(Number)
const token = process.env.BENCH_TOKEN ?? 'bench-token'
const name = process.env.BENCH_NAME ?? 'bench plant'
let nextId = Number(process.env.BENCH_ID_BASE ?? 2 ** 32)
const agent = new Agent({ keepAlive: true, maxSockets: connections })
const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` }

let sent = 0
let answered = 0
let non2xx = 0
let errors = 0
const started = process.hrtime.bigint()
await new Promise((resolve) => {
  const done = () => { if (++answered === total) resolve() }
  const next = () => {
    if (sent >= total) return
    sent += 1
    nextId += 1
    const body = `{"id":${nextId},"name":${JSON.stringify(name)}}`
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/plants', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      if (res.statusCode < 200 || res.statusCode > 299) non2xx += 1
      res.resume()
      res.on('end', () => { done(); next() })
    })
    req.on('error', () => { errors += 1; done(); next() })
    req.end(body)
  }
  for (let i = 0; i < Math.min(connections, total); i++) next()
})
agent.destroy()
process.stdout.write('BENCH_RESULT ' + JSON.stringify({ requests: answered, durationUs: Number(process.hrtime.bigint() - started) / 1000, non2xx, errors }) + '\n')
