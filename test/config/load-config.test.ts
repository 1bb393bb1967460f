import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getHeapStatistics } from 'node:v8'
import { describe, expect, it, onTestFinished } from 'vitest'
import { defaultMaxHeapUsedBytes, loadConfig } from '../../src/config/load-config.js'
import { readTokens, readTokensFile } from '../../src/config/tokens.js'
import { ConfigError } from '../../src/config/config-error.js'
import { TOKEN } from '../helpers.js'

const noLimit = { memoryLimit: () => undefined }
const MiB = 1024 * 1024
/** Two more tokens of the least accepted length, 16 characters. */
const [A, B] = ['token-a-01234567', 'token-b-01234567']

describe('loadConfig', () => {
  it('defaults MAX_PLANTS to one plant per 8 KiB of a container\'s memory limit, at most 1,000,000 (without a limit too); MAX_PLANTS overrides it', () => {
    expect(loadConfig({ API_TOKENS: TOKEN }, { memoryLimit: () => 96 * MiB }).MAX_PLANTS).toBe(12288)
    expect(loadConfig({ API_TOKENS: TOKEN }, { memoryLimit: () => 96 * MiB + 8191 }).MAX_PLANTS).toBe(12288)
    expect(loadConfig({ API_TOKENS: TOKEN }, { memoryLimit: () => 8192 * MiB }).MAX_PLANTS).toBe(1000000)
    expect(loadConfig({ API_TOKENS: TOKEN }, noLimit).MAX_PLANTS).toBe(1000000)
    expect(loadConfig({ API_TOKENS: 'max-plants-token', MAX_PLANTS: '1000' }, { memoryLimit: () => 96 * MiB }).MAX_PLANTS).toBe(1000)
    expect(loadConfig({ API_TOKENS: 'max-plants-token', MAX_PLANTS: '12288' }, { memoryLimit: () => 96 * MiB }).MAX_PLANTS).toBe(12288)
    expect(loadConfig({ API_TOKENS: 'max-plants-token', MAX_PLANTS: '16000000' }, noLimit).MAX_PLANTS).toBe(16000000)
    expect(loadConfig({ API_TOKENS: 'max-plants-token', MAX_PLANTS: '5000000' }, { memoryLimit: () => 64 * 1024 * MiB }).MAX_PLANTS).toBe(5000000)
  })

  it('refuses an explicit MAX_PLANTS the memory limit cannot hold (more than one plant per 8 KiB of it), naming both', () => {
    const in96MiB = { memoryLimit: () => 96 * MiB }
    expect(() => loadConfig({ API_TOKENS: 'max-plants-token', MAX_PLANTS: '1000000' }, in96MiB))
      .toThrow(new ConfigError('MAX_PLANTS (1000000) is more than the memory limit (96 MiB) holds: at most 12288, one plant per 8 KiB of it'))
    // Named so in a stack trace: the one line printed before exit 1 is the message alone.
    expect(() => loadConfig({ API_TOKENS: 'max-plants-token', MAX_PLANTS: '1000000' }, in96MiB)).toThrow(expect.objectContaining({ name: 'ConfigError' }))
    expect(() => loadConfig({ API_TOKENS: 'max-plants-token', MAX_PLANTS: '12289' }, in96MiB))
      .toThrow(/^MAX_PLANTS \(12289\) is more than the memory limit \(96 MiB\) holds: at most 12288,/)
    expect(() => loadConfig({ API_TOKENS: 'max-plants-token', MAX_PLANTS: '5000000' }, { memoryLimit: () => 8192 * MiB }))
      .toThrow(/\(8192 MiB\) holds: at most 1048576,/)
  })

  it('sheds load (503) at 85 % of a container\'s memory limit in resident anonymous memory by default; MAX_RSS_ANON_BYTES overrides it, 0 turns it off', () => {
    const in96MiB = { memoryLimit: () => 96 * MiB }
    expect(loadConfig({ API_TOKENS: TOKEN }, in96MiB).MAX_RSS_ANON_BYTES).toBe(Math.floor(96 * MiB * 0.85))
    expect(loadConfig({ API_TOKENS: TOKEN }, noLimit).MAX_RSS_ANON_BYTES).toBe(0)
    expect(loadConfig({ API_TOKENS: TOKEN, MAX_RSS_ANON_BYTES: String(80 * MiB) }, in96MiB).MAX_RSS_ANON_BYTES).toBe(80 * MiB)
    expect(loadConfig({ API_TOKENS: TOKEN, MAX_RSS_ANON_BYTES: '0' }, in96MiB).MAX_RSS_ANON_BYTES).toBe(0)
  })

  it('sheds at half a container\'s memory limit of heap in use by default, unless V8\'s own limit is lower; MAX_HEAP_USED_BYTES overrides it', () => {
    // V8 sizes its heap from the machine, not the container.
    const in96MiB = { memoryLimit: () => 96 * MiB }
    expect(loadConfig({ API_TOKENS: TOKEN }, in96MiB).MAX_HEAP_USED_BYTES).toBe(Math.min(defaultMaxHeapUsedBytes(), 48 * MiB))
    expect(loadConfig({ API_TOKENS: TOKEN }, { memoryLimit: () => 2 ** 50 }).MAX_HEAP_USED_BYTES).toBe(defaultMaxHeapUsedBytes())
    expect(loadConfig({ API_TOKENS: TOKEN }, noLimit).MAX_HEAP_USED_BYTES).toBe(defaultMaxHeapUsedBytes())
    expect(loadConfig({ API_TOKENS: TOKEN, MAX_HEAP_USED_BYTES: String(200 * MiB) }, in96MiB).MAX_HEAP_USED_BYTES).toBe(200 * MiB)
  })

  it(
    'holds log lines for a slow reader up to 1/32 of a memory limit (2 MiB at most, 64 KiB at least, 2 MiB without a limit); LOG_BUFFER_MAX_BYTES overrides it',
    () => {
      const limited = (bytes: number) => ({ memoryLimit: () => bytes })
      expect(loadConfig({ API_TOKENS: TOKEN }, limited(48 * MiB)).LOG_BUFFER_MAX_BYTES).toBe(1.5 * MiB)
      expect(loadConfig({ API_TOKENS: TOKEN }, limited(50 * MiB + 31)).LOG_BUFFER_MAX_BYTES).toBe(Math.floor((50 * MiB + 31) / 32))
      expect(loadConfig({ API_TOKENS: TOKEN }, limited(64 * MiB)).LOG_BUFFER_MAX_BYTES).toBe(2 * MiB)
      expect(loadConfig({ API_TOKENS: TOKEN }, limited(96 * MiB)).LOG_BUFFER_MAX_BYTES).toBe(2 * MiB)
      expect(loadConfig({ API_TOKENS: TOKEN }, limited(MiB)).LOG_BUFFER_MAX_BYTES).toBe(64 * 1024)
      expect(loadConfig({ API_TOKENS: TOKEN }, limited(4 * MiB)).LOG_BUFFER_MAX_BYTES).toBe(128 * 1024)
      expect(loadConfig({ API_TOKENS: TOKEN }, noLimit).LOG_BUFFER_MAX_BYTES).toBe(2 * MiB)
      expect(loadConfig({ API_TOKENS: TOKEN, LOG_BUFFER_MAX_BYTES: String(4 * MiB) }, limited(96 * MiB)).LOG_BUFFER_MAX_BYTES).toBe(4 * MiB)
      expect(() => loadConfig({ API_TOKENS: TOKEN, LOG_BUFFER_MAX_BYTES: '1000' }, noLimit)).toThrow(/LOG_BUFFER_MAX_BYTES/)
    })

  it('uses the documented defaults (outside a container: no memory limit), with no key for a variable unset', () => {
    expect(loadConfig({ API_TOKENS: TOKEN }, noLimit)).toStrictEqual({
      PORT: 3000,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      LOG_BUFFER_MAX_BYTES: 2 * MiB,
      API_TOKENS: TOKEN,
      DATABASE_URL: 'memory:',
      DATABASE_POOL_MAX: 10,
      DATABASE_STATEMENT_TIMEOUT_MS: 5000,
      BODY_LIMIT: 16384,
      MAX_PLANTS: 1000000,
      SHUTDOWN_TIMEOUT_MS: 8000,
      SHUTDOWN_DELAY_MS: 0,
      HEADERS_TIMEOUT_MS: 10000,
      REQUEST_TIMEOUT_MS: 15000,
      CONNECTION_TIMEOUT_MS: 30000,
      KEEP_ALIVE_TIMEOUT_MS: 72000,
      MAX_HEADER_BYTES: 16384,
      MAX_EVENT_LOOP_DELAY_MS: 200,
      MAX_HEAP_USED_BYTES: defaultMaxHeapUsedBytes(),
      MAX_RSS_BYTES: 0,
      MAX_RSS_ANON_BYTES: 0,
      RATE_LIMIT_PER_MINUTE: 0,
      METRICS_HOST: '127.0.0.1',
      tokens: [{ token: TOKEN }],
      corsOrigins: undefined
    })
  })

  it('reads CORS_ORIGINS as exact origins, trimming blanks and duplicates; * alone is any origin', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, CORS_ORIGINS: ' https://a.example, http://localhost:5173,,https://a.example, http://[::1]:8080 ' }).corsOrigins)
      .toEqual(['https://a.example', 'http://localhost:5173', 'http://[::1]:8080'])
    expect(loadConfig({ API_TOKENS: TOKEN, CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*'])
  })

  it('leaves CORS off when CORS_ORIGINS is blank or lists no origin', () => {
    for (const CORS_ORIGINS of ['', ' ', ' , ']) expect(loadConfig({ API_TOKENS: TOKEN, CORS_ORIGINS }).corsOrigins).toBeUndefined()
  })

  it('reads comma-separated tokens, trimming blanks and duplicates', () => {
    expect(loadConfig({ API_TOKENS: ` ${A}, ${B},,${A} ` }).tokens).toEqual([{ token: A }, { token: B }])
  })

  it('reads one token per line from API_TOKENS_FILE', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'plants-')), 'tokens')
    writeFileSync(file, `${A}\r\n${B}\n\n`)
    expect(loadConfig({ API_TOKENS_FILE: file })).toMatchObject({ tokens: [{ token: A }, { token: B }], API_TOKENS_FILE: file })
  })

  it('reads the PostgreSQL pool size and statement timeout', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, DATABASE_POOL_MAX: '40', DATABASE_STATEMENT_TIMEOUT_MS: '1500' }))
      .toMatchObject({ DATABASE_POOL_MAX: 40, DATABASE_STATEMENT_TIMEOUT_MS: 1500 })
  })

  it('reads SHUTDOWN_DELAY_MS (milliseconds of not-ready serving after SIGTERM)', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, SHUTDOWN_DELAY_MS: '5000' }).SHUTDOWN_DELAY_MS).toBe(5000)
  })

  /** The whole refusal of the CORS origin at `position`. */
  const corsRefusal = (position: number, origin: string) => new ConfigError(`CORS_ORIGINS: origin ${position} (${origin}) ` +
    'is not http(s)://host[:port] as a browser sends it (lower-case host, no path, no default port), nor * alone for any origin')
  const refusals: [string, NodeJS.ProcessEnv, RegExp | ConfigError][] = [
    ['no token at all', {}, /^API_TOKENS: at least one bearer token is required \(API_TOKENS or API_TOKENS_FILE\); the service never runs open$/],
    ['only blank tokens', { API_TOKENS: ' , ' }, /^API_TOKENS: at least one bearer token/],
    ['a token with a space', { API_TOKENS: 'a b' }, /^API_TOKENS entry 1: the token has characters/],
    ['both token sources', { API_TOKENS: TOKEN, API_TOKENS_FILE: '/x' }, /^API_TOKENS and API_TOKENS_FILE are both set/],
    ['a missing tokens file', { API_TOKENS_FILE: '/nonexistent/tokens' }, /^API_TOKENS_FILE: ENOENT: no such file or directory, open '\/nonexistent\/tokens'$/],
    ['a PORT that is not a number', { API_TOKENS: TOKEN, PORT: 'abc' }, /^PORT: Expected number$/],
    ['a PORT of Infinity', { API_TOKENS: TOKEN, PORT: 'Infinity' }, /^PORT: Expected number$/],
    ['a PORT out of range', { API_TOKENS: TOKEN, PORT: '70000' }, /^PORT: Expected number to be less or equal to 65535$/],
    ['an unknown LOG_LEVEL', { API_TOKENS: TOKEN, LOG_LEVEL: 'loud' }, /^LOG_LEVEL/],
    ['a BODY_LIMIT below 64', { API_TOKENS: TOKEN, BODY_LIMIT: '10' }, /^BODY_LIMIT: Expected number to be greater or equal to 64$/],
    ['a MAX_PLANTS of 0', { API_TOKENS: TOKEN, MAX_PLANTS: '0' }, /^MAX_PLANTS: Expected number to be greater or equal to 1$/],
    ['a DATABASE_POOL_MAX of 0', { API_TOKENS: TOKEN, DATABASE_POOL_MAX: '0' }, /^DATABASE_POOL_MAX: Expected number to be greater or equal to 1$/],
    ['a DATABASE_POOL_MAX that is not a number', { API_TOKENS: TOKEN, DATABASE_POOL_MAX: 'ten' }, /^DATABASE_POOL_MAX: Expected number$/],
    ['a DATABASE_STATEMENT_TIMEOUT_MS below 100', { API_TOKENS: TOKEN, DATABASE_STATEMENT_TIMEOUT_MS: '0' },
      /^DATABASE_STATEMENT_TIMEOUT_MS: Expected number to be greater or equal to 100$/],
    ['a negative SHUTDOWN_DELAY_MS', { API_TOKENS: TOKEN, SHUTDOWN_DELAY_MS: '-1' }, /^SHUTDOWN_DELAY_MS: Expected number to be greater or equal to 0$/],
    ['a SHUTDOWN_DELAY_MS above 10 minutes', { API_TOKENS: TOKEN, SHUTDOWN_DELAY_MS: '600001' },
      /^SHUTDOWN_DELAY_MS: Expected number to be less or equal to 600000$/],
    ['a DATABASE_STATEMENT_TIMEOUT_MS above 10 minutes', { API_TOKENS: TOKEN, DATABASE_STATEMENT_TIMEOUT_MS: '600001' },
      /^DATABASE_STATEMENT_TIMEOUT_MS: Expected number to be less or equal to 600000$/],
    ['a CORS origin with a path', { API_TOKENS: TOKEN, CORS_ORIGINS: 'https://a.example/app' }, corsRefusal(1, 'https://a.example/app')],
    ['a CORS origin with a trailing slash', { API_TOKENS: TOKEN, CORS_ORIGINS: 'https://a.example, https://b.example/' }, corsRefusal(2, 'https://b.example/')],
    ['a CORS origin with capitals or a default port', { API_TOKENS: TOKEN, CORS_ORIGINS: 'https://A.example:443' }, corsRefusal(1, 'https://A.example:443')],
    ['a CORS origin without a scheme', { API_TOKENS: TOKEN, CORS_ORIGINS: 'a.example' }, corsRefusal(1, 'a.example')],
    ['a CORS origin of another scheme', { API_TOKENS: TOKEN, CORS_ORIGINS: 'ws://a.example' }, corsRefusal(1, 'ws://a.example')],
    ['a CORS origin of a scheme that ends in https', { API_TOKENS: TOKEN, CORS_ORIGINS: 'xhttps://a.example' }, corsRefusal(1, 'xhttps://a.example')],
    ['a CORS origin pattern', { API_TOKENS: TOKEN, CORS_ORIGINS: 'https://*.example' }, corsRefusal(1, 'https://*.example')],
    ['a CORS origin pattern after its first letter', { API_TOKENS: TOKEN, CORS_ORIGINS: 'https://app*.example' }, corsRefusal(1, 'https://app*.example')],
    ['a CORS origin that only looks like one (no URL parses it)', { API_TOKENS: TOKEN, CORS_ORIGINS: 'https://a b.example' },
      corsRefusal(1, 'https://a b.example')],
    ['* beside other CORS origins', { API_TOKENS: TOKEN, CORS_ORIGINS: '*, https://a.example' }, corsRefusal(1, '*')],
    ['a DATABASE_URL of a store the service has not', { API_TOKENS: TOKEN, DATABASE_URL: 'mysql://user:secret@db/plants' },
      /^DATABASE_URL: Expected string to match '\^\(memory:\$\|sqlite:\|postgres\(ql\)\?:\/\/\)'$/],
    ['a DATABASE_URL without a scheme', { API_TOKENS: TOKEN, DATABASE_URL: './plants.db' }, /^DATABASE_URL: Expected string to match/],
    ['a DATABASE_URL in capitals', { API_TOKENS: TOKEN, DATABASE_URL: 'POSTGRES://db/plants' }, /^DATABASE_URL: Expected string to match/],
    ['a METRICS_PORT that is not a number', { API_TOKENS: TOKEN, METRICS_PORT: 'x' }, /^METRICS_PORT: Expected number$/],
    ['a METRICS_PORT out of range', { API_TOKENS: TOKEN, METRICS_PORT: '65536' }, /^METRICS_PORT: Expected number to be less or equal to 65535$/],
    ['a METRICS_PORT equal to PORT', { API_TOKENS: TOKEN, PORT: '8080', METRICS_PORT: '8080' },
      /^METRICS_PORT must differ from PORT: metrics are never served on the API port$/],
    ['an OTLP endpoint that is not a URL', { API_TOKENS: TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      /^OTEL_EXPORTER_OTLP_ENDPOINT: Expected string to match '\^https\?:\/\/\[\^\/\]'$/],
    ['an OTLP endpoint over gRPC', { API_TOKENS: TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' },
      /^OTEL_EXPORTER_OTLP_ENDPOINT: Expected string to match/]
  ]
  for (const [what, env, message] of refusals) {
    it(`refuses ${what} with a line naming the variable`, () => {
      expect(() => loadConfig(env)).toThrow(message)
    })
  }

  it('serves no metrics and exports no traces unless asked (METRICS_PORT, OTEL_EXPORTER_OTLP_ENDPOINT); empty counts as unset', () => {
    for (const env of [
      { API_TOKENS: TOKEN },
      { API_TOKENS: TOKEN, METRICS_PORT: '', METRICS_HOST: '0.0.0.0', OTEL_EXPORTER_OTLP_ENDPOINT: ' ' },
      { API_TOKENS: TOKEN, METRICS_PORT: '  ', OTEL_EXPORTER_OTLP_ENDPOINT: '' }
    ]) {
      const config = loadConfig(env)
      expect(config).not.toHaveProperty('METRICS_PORT')
      expect(config).not.toHaveProperty('OTEL_EXPORTER_OTLP_ENDPOINT')
    }
  })

  it('listens for metrics on METRICS_PORT at METRICS_HOST, which defaults to HOST', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, METRICS_PORT: '9464' })).toMatchObject({ METRICS_PORT: 9464, METRICS_HOST: '127.0.0.1' })
    expect(loadConfig({ API_TOKENS: TOKEN, HOST: '0.0.0.0', METRICS_PORT: '9464' })).toMatchObject({ METRICS_PORT: 9464, METRICS_HOST: '0.0.0.0' })
    expect(loadConfig({ API_TOKENS: TOKEN, HOST: '0.0.0.0', METRICS_PORT: '9464', METRICS_HOST: '10.0.0.5' }))
      .toMatchObject({ METRICS_PORT: 9464, METRICS_HOST: '10.0.0.5' })
    // Both 0: each gets a free port of its own.
    expect(loadConfig({ API_TOKENS: TOKEN, PORT: '0', METRICS_PORT: '0' })).toMatchObject({ METRICS_PORT: 0, METRICS_HOST: '127.0.0.1' })
  })

  it('reads OTEL_EXPORTER_OTLP_ENDPOINT as given', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://collector:4318')
  })
})

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex')
const SECRET = 'Secret-token_0123.4567~89+/AB=='

function tokensFile (text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-tokens-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'tokens')
  writeFileSync(file, text)
  return file
}

/** The ConfigError message, checked to be one line that never carries the secret. */
function refusal (parse: () => unknown): string {
  let caught: unknown
  try {
    parse()
  } catch (error) {
    caught = error
  }
  expect(caught).toBeInstanceOf(ConfigError)
  const message = (caught as ConfigError).message
  expect(message).not.toContain('\n')
  expect(message).not.toContain(SECRET)
  expect(message).not.toContain(sha256(SECRET))
  expect(message).not.toContain('Secret')
  return message
}

describe('token entries: named, hashed and plain', () => {
  it('reads name:token entries from API_TOKENS beside plain ones (an unnamed entry has no name property at all)', () => {
    expect(loadConfig({ API_TOKENS: `billing:${SECRET}, plain-token-0123456789 ,shop.eu-1:${B}` }).tokens).toStrictEqual([
      { name: 'billing', token: SECRET },
      { token: 'plain-token-0123456789' },
      { name: 'shop.eu-1', token: B }
    ])
  })

  it('reads named, hashed and plain lines from API_TOKENS_FILE, hex digits in either case (kept in lower case)', () => {
    const digest = sha256(SECRET)
    const file = tokensFile(`billing:sha256:${digest.toUpperCase()}\r\n\nshop:${A}\n${B}\n`)
    expect(loadConfig({ API_TOKENS_FILE: file }).tokens).toEqual([
      { name: 'billing', sha256: digest },
      { name: 'shop', token: A },
      { token: B }
    ])
  })

  it('accepts hashed entries in API_TOKENS too (the same forms everywhere)', () => {
    expect(readTokens(`billing:sha256:${sha256(SECRET)}`, 'API_TOKENS')).toEqual({ entries: [{ name: 'billing', sha256: sha256(SECRET) }] })
  })

  it('reserves a client name only for named entries: an unnamed token never clashes with a name, its prefixes included', () => {
    expect(readTokens(`billing-0123456789,billing:${B}`, 'API_TOKENS')).toEqual({ entries: [{ token: 'billing-0123456789' }, { name: 'billing', token: B }] })
    expect(readTokens(`billing-0123456789,billing-012345678:${B}`, 'API_TOKENS'))
      .toEqual({ entries: [{ token: 'billing-0123456789' }, { name: 'billing-012345678', token: B }] })
  })

  it('accepts a name of 64 characters from the whole name alphabet', () => {
    const name = `A-z.0_9${'x'.repeat(57)}`
    expect(name).toHaveLength(64)
    expect(readTokens(`${name}:${A}`, 'API_TOKENS')).toEqual({ entries: [{ name, token: A }] })
  })

  it('keeps one entry for an unnamed token listed twice, as before names existed', () => {
    expect(readTokens(`${A}\n${B}\n${A}\n`, 'API_TOKENS_FILE')).toEqual({ entries: [{ token: A }, { token: B }] })
  })

  it('reloads through readTokensFile with the same rules', () => {
    expect(readTokensFile(tokensFile(`ci:${A}\n`))).toEqual({ entries: [{ name: 'ci', token: A }] })
    // A file that cannot be read lists no entry: a reload then revokes nothing.
    expect(readTokensFile(join(tmpdir(), 'plant-store-no-such-tokens-file')).entries).toEqual([])
  })

  // Each case: the text, and the start of the one-line message (variable, position, reason).
  const fileRefusals: [string, string, string][] = [
    ['a name with a space', `ok:${A}\nmy client:${SECRET}`, 'API_TOKENS_FILE line 2: a client name is 1 to 64 characters'],
    ['an empty name', `\n:${SECRET}`, 'API_TOKENS_FILE line 2: a client name is 1 to 64 characters'],
    ['a name of 65 characters', `${'n'.repeat(65)}:${SECRET}`, 'API_TOKENS_FILE line 1: a client name is 1 to 64 characters'],
    ['a name without a token', `a:${A}\n\n\nbilling:`, 'API_TOKENS_FILE line 4: no token after the client name'],
    ['a token with characters a bearer token cannot carry', `billing:${SECRET} x`,
      'API_TOKENS_FILE line 1: the token has characters a bearer token cannot carry (allowed: A-Z a-z 0-9 - . _ ~ + / and trailing =)'],
    ['a second colon in a plain token', `billing:${SECRET}:x`, 'API_TOKENS_FILE line 1: the token has characters a bearer token cannot carry'],
    ['a hashed entry without a name', `a:${A}\nsha256:${sha256(SECRET)}`, 'API_TOKENS_FILE line 2: a hashed entry needs a client name in front'],
    ['a hashed entry with 63 hex digits', `billing:sha256:${sha256(SECRET).slice(1)}`,
      'API_TOKENS_FILE line 1: sha256: must be followed by exactly 64 hex digits'],
    ['a token that holds sha256: after other characters', `billing:xsha256:${sha256(SECRET)}`,
      'API_TOKENS_FILE line 1: the token has characters a bearer token cannot carry'],
    ['a hashed entry with a character before its 64 hex digits', `billing:sha256:x${sha256(SECRET)}`,
      'API_TOKENS_FILE line 1: sha256: must be followed by exactly 64 hex digits'],
    ['a hashed entry with a non-hex digit', `billing:sha256:${sha256(SECRET).slice(1)}g`,
      'API_TOKENS_FILE line 1: sha256: must be followed by exactly 64 hex digits'],
    ['sha256sum\'s output pasted whole', `billing:sha256:${sha256(SECRET)}  -`, 'API_TOKENS_FILE line 1: sha256: must be followed by exactly 64 hex digits'],
    ['a duplicate name', `billing:${SECRET}\nshop:${A}\nbilling:${B}`, 'API_TOKENS_FILE line 3: duplicate client name (first on line 1); names are unique'],
    ['a duplicate name, once hashed', `billing:${A}\nbilling:sha256:${sha256(SECRET)}`, 'API_TOKENS_FILE line 2: duplicate client name (first on line 1)'],
    ['one token under two names', `billing:${SECRET}\nshop:${SECRET}`,
      'API_TOKENS_FILE line 2: the same token as line 1, under another client name or none; a token belongs to one client'],
    ['one token named and unnamed', `${SECRET}\nbilling:${SECRET}`, 'API_TOKENS_FILE line 2: the same token as line 1, under another client name or none'],
    ['one token unnamed after named', `billing:${SECRET}\n${SECRET}`, 'API_TOKENS_FILE line 2: the same token as line 1, under another client name or none'],
    ['one token plain and hashed under two names', `billing:sha256:${sha256(SECRET)}\nshop:${SECRET}`,
      'API_TOKENS_FILE line 2: the same token as line 1, under another client name or none'],
    ['a token of 15 characters', `ci:${A}\n\n${A.slice(1)}`,
      'API_TOKENS_FILE line 3: the token is shorter than 16 characters; use a random one, e.g. `openssl rand -hex 32`'],
    ['a named token of one character', 'ci:a', 'API_TOKENS_FILE line 1: the token is shorter than 16 characters'],
    ['only blank lines', '\n \n', 'API_TOKENS_FILE: at least one bearer token is required']
  ]
  for (const [what, text, message] of fileRefusals) {
    it(`refuses ${what} with one line naming the file's variable and the line number, never the token`, () => {
      expect(refusal(() => loadConfig({ API_TOKENS_FILE: tokensFile(text) }))).toMatch(new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
    })
  }

  const listRefusals: [string, string, string][] = [
    ['a bad name', `ok:${A}, , bad name:${SECRET}`, 'API_TOKENS entry 3: a client name is 1 to 64 characters'],
    ['a duplicate name', `billing:${SECRET},billing:b`, 'API_TOKENS entry 2: duplicate client name (first on entry 1)'],
    ['one token under two names', `billing:${SECRET},shop:${SECRET}`, 'API_TOKENS entry 2: the same token as entry 1, under another client name or none'],
    ['a hashed entry without a name', `sha256:${sha256(SECRET)}`, 'API_TOKENS entry 1: a hashed entry needs a client name in front'],
    ['a token of one character', 'a', 'API_TOKENS entry 1: the token is shorter than 16 characters; use a random one'],
    ['a named token of 15 characters', `${A},ci:${B.slice(1)}`, 'API_TOKENS entry 2: the token is shorter than 16 characters']
  ]
  for (const [what, text, message] of listRefusals) {
    it(`refuses ${what} in API_TOKENS with one line naming the variable and the entry number, never the token`, () => {
      expect(refusal(() => loadConfig({ API_TOKENS: text }))).toContain(message)
    })
  }
})

// Every whole-number setting with its documented range and default (docs/configuration.md): the
// bounds are inclusive, one past either is refused with the variable's name and the bound.
const wholeSettings: [name: string, min: number, max: number | undefined, fallback: number | undefined,
  read: (config: ReturnType<typeof loadConfig>) => unknown][] = [
  ['PORT', 0, 65535, 3000, (c) => c.PORT],
  ['DATABASE_POOL_MAX', 1, 1000, 10, (c) => c.DATABASE_POOL_MAX],
  ['DATABASE_STATEMENT_TIMEOUT_MS', 100, 600000, 5000, (c) => c.DATABASE_STATEMENT_TIMEOUT_MS],
  ['BODY_LIMIT', 64, 1048576, 16384, (c) => c.BODY_LIMIT],
  ['MAX_PLANTS', 1, 16000000, 1000000, (c) => c.MAX_PLANTS],
  ['SHUTDOWN_TIMEOUT_MS', 100, 600000, 8000, (c) => c.SHUTDOWN_TIMEOUT_MS],
  ['SHUTDOWN_DELAY_MS', 0, 600000, 0, (c) => c.SHUTDOWN_DELAY_MS],
  ['LOG_BUFFER_MAX_BYTES', 65536, 1073741824, 2 * 1024 * 1024, (c) => c.LOG_BUFFER_MAX_BYTES],
  ['HEADERS_TIMEOUT_MS', 100, 600000, 10000, (c) => c.HEADERS_TIMEOUT_MS],
  ['REQUEST_TIMEOUT_MS', 100, 600000, 15000, (c) => c.REQUEST_TIMEOUT_MS],
  ['CONNECTION_TIMEOUT_MS', 100, 600000, 30000, (c) => c.CONNECTION_TIMEOUT_MS],
  ['KEEP_ALIVE_TIMEOUT_MS', 100, 600000, 72000, (c) => c.KEEP_ALIVE_TIMEOUT_MS],
  ['MAX_HEADER_BYTES', 1024, 65536, 16384, (c) => c.MAX_HEADER_BYTES],
  ['MAX_EVENT_LOOP_DELAY_MS', 0, 60000, 200, (c) => c.MAX_EVENT_LOOP_DELAY_MS],
  ['MAX_HEAP_USED_BYTES', 0, Number.MAX_SAFE_INTEGER, undefined, (c) => c.MAX_HEAP_USED_BYTES],
  ['MAX_RSS_BYTES', 0, Number.MAX_SAFE_INTEGER, 0, (c) => c.MAX_RSS_BYTES],
  ['MAX_RSS_ANON_BYTES', 0, Number.MAX_SAFE_INTEGER, 0, (c) => c.MAX_RSS_ANON_BYTES],
  ['RATE_LIMIT_PER_MINUTE', 0, 100000000, 0, (c) => c.RATE_LIMIT_PER_MINUTE],
  ['METRICS_PORT', 0, 65535, undefined, (c) => c.METRICS_PORT]
]

describe('whole-number settings', () => {
  for (const [name, min, max, fallback, read] of wholeSettings) {
    it(`reads ${name} from ${min} to ${max ?? 'any size'} (default ${fallback ?? 'unset'}) and names it when out of range`, () => {
      // Headers may take as long as the whole request: both at their extremes, so that either can be tried alone.
      const load = (value: string) => loadConfig({ API_TOKENS: TOKEN, HEADERS_TIMEOUT_MS: '100', REQUEST_TIMEOUT_MS: '600000', [name]: value }, noLimit)
      expect(read(load(String(min)))).toBe(min)
      if (max !== undefined) {
        expect(read(load(String(max)))).toBe(max)
        expect(() => load(String(max + 1))).toThrow(new ConfigError(`${name}: Expected number to be less or equal to ${max}`))
      }
      expect(() => load(String(min - 1))).toThrow(new ConfigError(`${name}: Expected number to be greater or equal to ${min}`))
      if (fallback !== undefined) expect(read(loadConfig({ API_TOKENS: TOKEN }, noLimit))).toBe(fallback)
      // Blank is unset (a default the image sets can be turned off with -e NAME=).
      expect(read(load(' '))).toBe(fallback ?? read(loadConfig({ API_TOKENS: TOKEN }, noLimit)))
      expect(() => load('x')).toThrow(new ConfigError(`${name}: Expected number`))
      expect(() => load(`${min}.5`)).toThrow(new ConfigError(`${name}: Expected number to be a multiple of 1`))
      for (const bad of ['2e-1', 'Infinity', 'NaN']) expect(() => load(bad), bad).toThrow(new RegExp(`^${name}: Expected number`))
      // Written as JavaScript would read a number: blanks around it, an exponent.
      expect(read(load(` ${min} `))).toBe(min)
    })
  }

  it('reads a whole number written with an exponent or a trailing .0', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, BODY_LIMIT: '1e3', MAX_PLANTS: '20.0' }, noLimit)).toMatchObject({ BODY_LIMIT: 1000, MAX_PLANTS: 20 })
  })

  it('lists every bad variable in one line, in the table\'s order', () => {
    expect(() => loadConfig({ API_TOKENS: TOKEN, MAX_HEADER_BYTES: '1', PORT: 'x', LOG_LEVEL: 'loud', HOST: '' }))
      .toThrow(new ConfigError('PORT: Expected number, LOG_LEVEL: Expected string to match \'^(fatal|error|warn|info|debug|trace|silent)$\', ' +
        'MAX_HEADER_BYTES: Expected number to be greater or equal to 1024'))
  })

  it('reads each log level', () => {
    for (const level of [
      'fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'
    ]) expect(loadConfig({ API_TOKENS: TOKEN, LOG_LEVEL: level }).LOG_LEVEL).toBe(level)
  })

  it('ignores variables it does not know, and a variable present but undefined', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, PATH: '/bin', PORTS: 'x', PORT: undefined }, noLimit)).toEqual(loadConfig({ API_TOKENS: TOKEN }, noLimit))
  })
})

describe('settings read together', () => {
  it('takes DATABASE_URL as given, and an empty or blank one as the memory store', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, DATABASE_URL: 'sqlite:/tmp/p.db' }).DATABASE_URL).toBe('sqlite:/tmp/p.db')
    expect(loadConfig({ API_TOKENS: TOKEN, DATABASE_URL: '' }).DATABASE_URL).toBe('memory:')
    // Blank is unset, as for the other variables the image sets (`-e DATABASE_URL=`).
    expect(loadConfig({ API_TOKENS: TOKEN, DATABASE_URL: '  ' }).DATABASE_URL).toBe('memory:')
  })

  it('allows HEADERS_TIMEOUT_MS equal to REQUEST_TIMEOUT_MS, not above it', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '5000' }))
      .toMatchObject({ HEADERS_TIMEOUT_MS: 5000, REQUEST_TIMEOUT_MS: 5000 })
    expect(() => loadConfig({ API_TOKENS: TOKEN, HEADERS_TIMEOUT_MS: '5001', REQUEST_TIMEOUT_MS: '5000' }))
      .toThrow(new ConfigError('HEADERS_TIMEOUT_MS must not be larger than REQUEST_TIMEOUT_MS'))
  })

  it('takes REDIS_URL only as redis:// or rediss://', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, RATE_LIMIT_PER_MINUTE: '5', REDIS_URL: 'rediss://r:6380' }))
      .toMatchObject({ RATE_LIMIT_PER_MINUTE: 5, REDIS_URL: 'rediss://r:6380' })
    expect(loadConfig({ API_TOKENS: TOKEN, RATE_LIMIT_PER_MINUTE: '5' })).not.toHaveProperty('REDIS_URL')
    for (const url of ['x-redis://r', 'redis:/r', 'REDIS://r']) {
      expect(() => loadConfig({ API_TOKENS: TOKEN, REDIS_URL: url }), url).toThrow(new ConfigError('REDIS_URL: Expected string to match \'^rediss?://\''))
    }
  })

  it('reads API_TOKENS_FILE when API_TOKENS is blank, and keeps the file only then', () => {
    const file = tokensFile(`${A}\n`)
    expect(loadConfig({ API_TOKENS: ' ', API_TOKENS_FILE: file })).toMatchObject({ tokens: [{ token: A }], API_TOKENS_FILE: file })
    expect(loadConfig({ API_TOKENS: B })).not.toHaveProperty('API_TOKENS_FILE')
  })

  it('defaults the heap bound to 90 % of V8\'s heap limit (shedding before the process dies of it)', () => {
    expect(defaultMaxHeapUsedBytes()).toBe(Math.floor(getHeapStatistics().heap_size_limit * 0.9))
  })

  it('keeps the heap default unless MAX_HEAP_USED_BYTES is set', () => {
    expect(loadConfig({ API_TOKENS: TOKEN }).MAX_HEAP_USED_BYTES).toBe(defaultMaxHeapUsedBytes())
    expect(loadConfig({ API_TOKENS: TOKEN, MAX_HEAP_USED_BYTES: '0' }).MAX_HEAP_USED_BYTES).toBe(0)
  })

  it('takes the OTLP endpoint trimmed, http or https only', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: ' https://c:4318 ' }).OTEL_EXPORTER_OTLP_ENDPOINT).toBe('https://c:4318')
    expect(loadConfig({ API_TOKENS: TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' }).OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://c')
    for (const url of ['file:///tmp/x', 'mailto:a@b', 'http//c', 'http:///c', 'xhttp://c']) {
      expect(() => loadConfig({ API_TOKENS: TOKEN, OTEL_EXPORTER_OTLP_ENDPOINT: url }), url).toThrow(/^OTEL_EXPORTER_OTLP_ENDPOINT: Expected string to match/)
    }
  })

  it('keeps METRICS_PORT 0 beside any PORT (each gets a free port)', () => {
    expect(loadConfig({ API_TOKENS: TOKEN, PORT: '8080', METRICS_PORT: '0' })).toMatchObject({ PORT: 8080, METRICS_PORT: 0 })
  })
})
