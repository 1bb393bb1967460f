import { execFile, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { PORTABLE_TEXT } from '../../src/schemas.js'
import { buildTestApp, postPlant } from '../helpers.js'

// The served document in a validator outside JavaScript: jsonschema_rs (Rust; what Schemathesis
// uses), from Python (python3 -m pip install jsonschema_rs). Without it the test skips with the
// reason printed; REQUIRE_JSONSCHEMA_RS=1 (CI) turns that skip into a failure.
const PYTHON = process.env.PYTHON ?? 'python3'
const SCRIPT = fileURLToPath(new URL('./compile-with-jsonschema-rs.py', import.meta.url))
const found = spawnSync(PYTHON, ['-c', 'import jsonschema_rs'], { stdio: 'ignore' }).status === 0
const required = process.env.REQUIRE_JSONSCHEMA_RS === '1'

if (!found) {
  console.warn(`OpenAPI document test in a non-JavaScript validator skipped: ${PYTHON} cannot import jsonschema_rs (python3 -m pip install ` +
    'jsonschema_rs; CI sets REQUIRE_JSONSCHEMA_RS=1)')
  if (required) {
    it('runs: REQUIRE_JSONSCHEMA_RS=1 turns the skip into a failure', () => {
      expect.fail(`REQUIRE_JSONSCHEMA_RS=1 but ${PYTHON} cannot import jsonschema_rs: the document would not be compiled outside JavaScript`)
    })
  }
}

/** What the service checks (no U+0000, no unpaired surrogate) as a JavaScript pattern: Rust's engine refuses it. */
const SURROGATE_PATTERN = '^(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$'

interface Report { compiled: number, examples: number, problems: string[], refusesNul: boolean, acceptsPair: boolean }

function compileOutsideJavaScript (document: string): Promise<Report> {
  return new Promise((resolve, reject) => {
    const child = execFile(PYTHON, [SCRIPT], { timeout: 60000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${SCRIPT} failed: ${stderr}`))
      else resolve(JSON.parse(stdout) as Report)
    })
    child.stdin?.end(document)
  })
}

describe.skipIf(!found)(found ? '/openapi.json in jsonschema_rs (Rust regular expressions)' : '/openapi.json in jsonschema_rs (skipped: not installed)', () => {
  it('compiles every schema of the served document, and every example in it is valid by its schema', async () => {
    const app = await buildTestApp()
    const served = await app.inject({ method: 'GET', url: '/openapi.json' })
    expect(served.statusCode).toBe(200)
    const report = await compileOutsideJavaScript(served.body)
    expect(report.problems).toEqual([])
    // Components, request and response bodies, headers, and the properties inside them.
    expect(report.compiled).toBeGreaterThan(20)
    expect(report.examples).toBeGreaterThan(15)
    // What the portable pattern can say, it says: U+0000 refused, a surrogate pair (🌿) accepted.
    expect(report.refusesNul).toBe(true)
    expect(report.acceptsPair).toBe(true)
  })

  it('fails the document the service validated with before (the JavaScript-only pattern): the check can fail', async () => {
    const app = await buildTestApp()
    const served = await app.inject({ method: 'GET', url: '/openapi.json' })
    const report = await compileOutsideJavaScript(served.body.replaceAll(JSON.stringify(PORTABLE_TEXT), JSON.stringify(SURROGATE_PATTERN)))
    expect(report.problems.length).toBeGreaterThan(0)
    expect(report.problems.join('\n')).toMatch(/does not compile/)
  })
})

describe('the published pattern and the service\'s own check', () => {
  it('publishes the portable pattern and the rule in the description, never the surrogate pattern', async () => {
    const app = await buildTestApp()
    const served = await app.inject({ method: 'GET', url: '/openapi.json' })
    expect(served.body).not.toContain(JSON.stringify(SURROGATE_PATTERN))
    const { components } = served.json() as {
      components: {
        schemas: Record<string, {
          properties: Record<string, {
            pattern?: string,
            description?: string
          }>
        }>
      }
    }
    for (const [schema, property] of [['NewPlant', 'name'], ['NewPlant', 'tag'], ['Plant', 'name'], ['Plant', 'tag']] as const) {
      expect(components.schemas[schema]?.properties[property]?.pattern, `${schema}.${property}`).toBe(PORTABLE_TEXT)
      expect(components.schemas[schema]?.properties[property]?.description, `${schema}.${property}`).toContain('No U+0000 and no unpaired surrogate')
    }
  })

  it('still refuses U+0000 and unpaired surrogates with 400, and stores a surrogate pair', async () => {
    const app = await buildTestApp()
    const message = 'must not contain U+0000 or unpaired surrogates'
    expect((await postPlant(app, '{"id":1,"name":"a\\u0000b"}')).json()).toEqual({ error: 400, message: `body/name ${message}` })
    expect((await postPlant(app, '{"id":1,"name":"a\\ud800b"}')).json()).toEqual({ error: 400, message: `body/name ${message}` })
    expect((await postPlant(app, '{"id":1,"name":"a","tag":"\\udc00"}')).json()).toEqual({ error: 400, message: `body/tag ${message}` })
    const pair = await postPlant(app, '{"id":1,"name":"Monstera \\ud83c\\udf3f"}')
    expect(pair.statusCode).toBe(200)
    expect(pair.json()).toEqual({ name: 'Monstera 🌿' })
  })
})
