import { ConfigError } from '../lib/config-error.js'

/**
 * CORS_ORIGINS: comma-separated origins exactly as a browser sends Origin (they are compared exactly),
 * or `*` alone for any. No patterns: `*` inside an origin is refused, not taken as a wildcard.
 */
export function parseCorsOrigins (text: string): string[] | undefined {
  const origins = [...new Set(text.split(',').map((origin) => origin.trim()).filter((origin) => origin !== ''))]
  if (origins.length === 0) return undefined
  if (origins.length > 1 && origins.includes('*')) {
    throw new ConfigError('CORS_ORIGINS: * allows every origin: write it alone, or list origins without it')
  }
  if (origins[0] === '*') return origins
  origins.forEach((origin, index) => {
    const problem = `CORS_ORIGINS: origin ${index + 1} (${origin}) is not scheme://host[:port]`
    if (origin.includes('*')) {
      throw new ConfigError(`${problem}: patterns are not supported, list each origin, or write * alone for any`)
    }
    const url = URL.parse(origin)
    if (url === null) throw new ConfigError(problem)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ConfigError(`${problem}: the scheme must be http or https`)
    }
    if (url.origin !== origin) {
      throw new ConfigError(`${problem} as a browser sends it: write ${url.origin} ` +
        '(no path, no trailing /, lower-case host, no default port)')
    }
  })
  return origins
}
