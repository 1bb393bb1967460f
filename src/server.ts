// The entry point (`node dist/server.js`, `npm start`, the image). Node's compile cache goes on before
// anything else is compiled (in NODE_COMPILE_CACHE, else the temporary directory; off with
// NODE_DISABLE_COMPILE_CACHE=1), so the service comes in through a dynamic import.
import module from 'node:module'

module.enableCompileCache?.()
await import('./main.js')
