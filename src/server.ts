// The entry point (`node dist/server.js`, `npm start`, the image). Node's compile cache first
// (https://nodejs.org/api/module.html#module-compile-cache): a start reads the V8 code of the modules
// from the cache instead of compiling them again. Static imports would all be compiled before this
// line ran, so the service itself comes in through a dynamic import (main.ts).
// The cache lives in NODE_COMPILE_CACHE when set (the image warms one at build time), else in the
// system's temporary directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off. A cache that cannot be
// written (a read-only filesystem) only costs the compile.
import module from 'node:module'

module.enableCompileCache?.()
await import('./main.js')
