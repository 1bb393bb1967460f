import { execFile, execFileSync } from 'node:child_process'
import { appendFileSync, chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { StoreUnavailableError } from '../../src/errors.js'
import { createObservedPlantRepository } from '../../src/observability/observed-plant-repository.js'
import { createRepository } from '../../src/storage.js'
import { runAs } from './pgbouncer.js'
import { findPostgresBinaries } from './postgres-standby.js'
import { freePort } from '../helpers.js'

// sslmode and sslrootcert as psql reads them (docs/storage.md, TLS), against a PostgreSQL this test
// starts itself that accepts only TLS (hostssl lines alone), with a CA made here. The server's
// certificate names `localhost` only, so 127.0.0.1 is a host name mismatch and localhost is not.

const run = promisify(execFile)
const bin = findPostgresBinaries()
const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'])
    return true
  } catch {
    return false
  }
})()
const skip = bin === undefined
  ? 'the PostgreSQL server binaries (initdb, pg_ctl) are not installed (apt-get install postgresql, or set PG_BIN)'
  : !hasOpenssl ? 'openssl is not installed' : undefined

if (process.env.REQUIRE_POSTGRES_TLS === '1' && skip !== undefined) {
  describe('PostgreSQL over TLS', () => {
    it('runs: REQUIRE_POSTGRES_TLS=1 turns a skip into a failure', () => { expect.fail(`REQUIRE_POSTGRES_TLS=1 but ${skip}`) })
  })
}
if (skip !== undefined) console.warn(`PostgreSQL TLS tests skipped: ${skip} (CI sets REQUIRE_POSTGRES_TLS=1)`)

interface TlsServer {
  port: number
  /** The CA that signed the server's certificate, and one that did not. */
  ca: string
  otherCa: string
  stop (): Promise<void>
}

async function startTlsServer (binDir: string): Promise<TlsServer> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-tls-'))
  const user = runAs()
  const openssl = async (...args: string[]): Promise<void> => { await run('openssl', args, { cwd: dir }) }
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  await openssl('req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=plant-store test CA')
  await openssl('req', '-x509', ...key, '-keyout', 'other.key', '-out', 'other.crt', '-days', '2', '-subj', '/CN=another CA')
  await openssl('req', ...key, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost\n')
  await openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'server.crt', '-days', '2', '-extfile', 'san.ext')
  const data = join(dir, 'data')
  if (user !== undefined) execFileSync('chown', ['-R', `${user.uid}:${user.gid}`, dir])
  chmodSync(join(dir, 'server.key'), 0o600)
  const tool = async (name: string, args: string[]): Promise<void> => {
    await run(join(binDir, name), args, { ...(user ?? {}), env: { PATH: process.env.PATH, LC_ALL: 'C' }, timeout: 60000 })
  }
  const port = await freePort()
  await tool('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-N', '--no-instructions'])
  appendFileSync(join(data, 'postgresql.conf'), [
    "listen_addresses = 'localhost'", `port = ${port}`, `unix_socket_directories = '${dir}'`, 'fsync = off',
    'ssl = on', `ssl_cert_file = '${join(dir, 'server.crt')}'`, `ssl_key_file = '${join(dir, 'server.key')}'`, ''
  ].join('\n'))
  // TLS or nothing: no `host` line, so a connection in clear text is refused.
  writeFileSync(join(data, 'pg_hba.conf'), 'local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n')
  if (user !== undefined) chownSync(join(data, 'pg_hba.conf'), user.uid, user.gid)
  await tool('pg_ctl', ['start', '-D', data, '-l', join(dir, 'server.log'), '-w'])
  return {
    port,
    ca: join(dir, 'ca.crt'),
    otherCa: join(dir, 'other.crt'),
    async stop () {
      await tool('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']).catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

describe.skipIf(skip !== undefined)(skip !== undefined
  ? `PostgreSQL TLS tests skipped: ${skip}`
  : 'PostgreSQL over TLS (a server that accepts only TLS, a private CA)', () => {
  let server: TlsServer
  beforeAll(async () => { server = await startTlsServer(bin as string) }, 60000)
  afterAll(() => server?.stop())

  /** The store on `url`, with the lines it logs; ready() tells whether it connected. */
  function open (url: string) {
    const lines: Array<{ fields: object, message: string }> = []
    const record = (fields: object, message: string): void => { lines.push({ fields, message }) }
    const log = { warn: record, info: record }
    // Failures are logged by the wrapper app.ts puts around any store.
    const store = createRepository({ DATABASE_URL: url, MAX_PLANTS: 100, DATABASE_STATEMENT_TIMEOUT_MS: 1000, log })
      .then((inner) => createObservedPlantRepository(inner, log))
    onTestFinished(async () => { await (await store).close() })
    return { store, lines }
  }

  async function connects (url: string): Promise<void> {
    const store = await open(url).store
    await expect(store.ready()).resolves.toBeUndefined()
    expect(await store.insert(BigInt(Date.now()) * 1000n + BigInt(Math.trunc(Math.random() * 1000)), { name: 'tls' })).toBe('created')
  }

  /** Not ready, and one log line whose cause names the certificate problem (`pattern`). */
  async function refused (url: string, pattern: RegExp): Promise<void> {
    const { store: opening, lines } = open(url)
    const store = await opening
    await expect(store.ready()).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(lines).toHaveLength(1)
    expect(JSON.stringify(lines[0])).toMatch(pattern)
  }

  const url = (host: string, query: string): string => `postgres://postgres@${host}:${server.port}/postgres?${query}`

  it('require encrypts without verifying the certificate, as libpq does (the CA is not trusted here)', async () => {
    await connects(url('127.0.0.1', 'sslmode=require'))
  })

  it('disable (and no sslmode, pg\'s default) is refused by a server that takes only TLS', async () => {
    await refused(url('127.0.0.1', 'sslmode=disable'), /no encryption/)
  })

  it('verify-ca checks the chain, not the host name: the CA passes at 127.0.0.1, another CA fails', async () => {
    await connects(url('127.0.0.1', `sslmode=verify-ca&sslrootcert=${server.ca}`))
    await refused(url('127.0.0.1', `sslmode=verify-ca&sslrootcert=${server.otherCa}`), /UNABLE_TO_VERIFY_LEAF_SIGNATURE/)
  })

  it('require with sslrootcert verifies the CA as verify-ca does (libpq: a root certificate given is checked)', async () => {
    await connects(url('127.0.0.1', `sslmode=require&sslrootcert=${server.ca}`))
    await refused(url('127.0.0.1', `sslmode=require&sslrootcert=${server.otherCa}`), /UNABLE_TO_VERIFY_LEAF_SIGNATURE/)
  })

  it('verify-full checks the chain and the host name: localhost passes, 127.0.0.1 is a mismatch, no CA fails', async () => {
    await connects(url('localhost', `sslmode=verify-full&sslrootcert=${server.ca}`))
    await refused(url('127.0.0.1', `sslmode=verify-full&sslrootcert=${server.ca}`), /ERR_TLS_CERT_ALTNAME_INVALID/)
    await refused(url('localhost', 'sslmode=verify-full'), /UNABLE_TO_VERIFY_LEAF_SIGNATURE/)
  })

  it('means the same with several hosts: each host is checked, and the problem is named in one line', async () => {
    const dead = await freePort()
    const hosts = (first: string, second: string): string => `postgres://postgres@${first}:${dead},${second}:${server.port}/postgres`
    await connects(`${hosts('127.0.0.1', '127.0.0.1')}?sslmode=require&target_session_attrs=read-write`)
    await connects(`${hosts('localhost', 'localhost')}?sslmode=verify-full&sslrootcert=${server.ca}&target_session_attrs=primary`)
    await refused(`${hosts('127.0.0.1', '127.0.0.1')}?sslmode=verify-full&sslrootcert=${server.ca}&target_session_attrs=read-write`,
      /ERR_TLS_CERT_ALTNAME_INVALID/)
  })
})
