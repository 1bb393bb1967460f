// Loaded with `node --import` by test/e2e/metrics.test.ts: writes `loaded: <url>` to stderr for each
// import of prom-client or an OpenTelemetry package, so the test can see which ones a start loads.
import { register } from 'node:module'

const hooks = `export async function resolve (specifier, context, next) {
  const result = await next(specifier, context)
  if (/prom-client|@opentelemetry/.test(result.url)) process.stderr.write('loaded: ' + result.url + '\\n')
  return result
}`
register(`data:text/javascript,${encodeURIComponent(hooks)}`)
