// Preload (node --import) for a tool a test runs that must not use the network: every outbound
// connection is refused and reported on stderr, so the test fails on it even when the tool swallows
// the error (update checks and telemetry do). Never import it into a test process.
import net from 'node:net'

const REFUSED = 'network-guard: refused a connection to'

net.Socket.prototype.connect = function connect (...args) {
  // net.connect passes its normalized arguments as one array; socket.connect(options | port, host).
  const first = Array.isArray(args[0]) ? args[0][0] : args[0]
  const target = typeof first === 'object' && first !== null
    ? first.path ?? `${first.host ?? 'localhost'}:${first.port}`
    : `${args[1] ?? 'localhost'}:${first}`
  process.stderr.write(`${REFUSED} ${target}\n`)
  process.nextTick(() => this.destroy(new Error(`${REFUSED} ${target}`)))
  return this
}
