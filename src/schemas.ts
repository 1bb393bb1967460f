import { Kind, Type, TypeRegistry, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox'

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

/** A number when it is a safe integer, else a bigint: the body parser's one form, so 5 and 5n never both occur. */
export type PlantId = number | bigint

TypeRegistry.Set('Int64', (_schema: unknown, value: unknown) =>
  Number.isSafeInteger(value) || (typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX))

/**
 * `integer/int64` for the document, checked by the `Int64` kind (JSON Schema validators cannot see bigints).
 * The range is in the description: 2^63 - 1 has no exact JavaScript number and would be published rounded.
 */
const Int64 = (description: string, example: number): TUnsafe<PlantId> =>
  Type.Unsafe<PlantId>({ [Kind]: 'Int64', type: 'integer', format: 'int64', description, examples: [example] })

/**
 * Text every store keeps exactly: no U+0000 (PostgreSQL text cannot hold it) and no lone surrogate
 * (UTF-8 encoders replace it). The pattern means the same with and without the `u` flag.
 */
export const STORABLE_TEXT = '^(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$'

/**
 * The published pattern (plugins/openapi.ts): surrogate escapes compile only in JavaScript's code-unit
 * regular expressions (Rust refuses them), so the document says the rest of the rule in words.
 */
export const PORTABLE_TEXT = '^[^\\u0000]*$'
const STORABLE_TEXT_RULE = 'No U+0000 and no unpaired surrogate ' +
  '(a \\uD800-\\uDFFF escape that is not a high-low pair): the service refuses either with 400'
const Text = (description: string, example: string) =>
  Type.String({ pattern: STORABLE_TEXT, description: `${description}. ${STORABLE_TEXT_RULE}`, examples: [example] })

// The examples are what the docs page sends (Swagger UI builds a body from them) and what the curl examples use.
export const Plant = Type.Object({
  name: Text('The name of the plant', 'Monstera'),
  tag: Type.Optional(Text('Tag that specifies the type of the plant', 'tropical'))
}, { $id: 'Plant', description: 'A plant of the store', examples: [{ name: 'Monstera', tag: 'tropical' }] })
export type Plant = Static<typeof Plant>

export const NewPlant = Type.Object({
  id: Int64(`Identification number of the plant: an integer from ${INT64_MIN} to ${INT64_MAX}, ` +
    'exact over the whole range', 10),
  ...Plant.properties
}, {
  $id: 'NewPlant',
  description: 'A plant to create. Properties other than id, name and tag are accepted and ignored, at any depth: ' +
    '`__proto__` and `constructor.prototype` keys too, which are dropped as the body is parsed ' +
    '(they never reach an object).',
  examples: [{ id: 10, name: 'Monstera', tag: 'tropical' }]
})
export type NewPlant = Static<typeof NewPlant>

const CONFLICT = 'a plant with id 10 already exists with another name or tag'
export const ErrorRecord = Type.Object({
  error: Type.Integer({ format: 'int32', description: 'The HTTP status code of the reply', examples: [409] }),
  message: Type.String({ description: 'What went wrong, for a person; generic for 5xx statuses', examples: [CONFLICT] })
}, { $id: 'Error', description: 'Every non-2xx reply', examples: [{ error: 409, message: CONFLICT }] })
export type ErrorRecord = Static<typeof ErrorRecord>

/** Replies the service really gives, shown in the document (test/openapi/examples.test.ts provokes each). */
const example = (error: number, message: string, summary: string) => ({ summary, value: { error, message } })

export const errorExamples = {
  invalidId: example(400, `body/id must be an integer between ${INT64_MIN} and ${INT64_MAX}`,
    'A string is not an id (no type coercion)'),
  invalidGzip: example(400, 'body is not valid gzip data', 'Content-Encoding: gzip on a body that is not gzip'),
  missingToken: example(401, 'a bearer token is required: send "Authorization: Bearer <token>"', 'No bearer token'),
  invalidToken: example(401, 'the bearer token is not valid', 'A token that is not accepted'),
  conflict: example(409, CONFLICT, 'Id 10 is stored with another name or tag'),
  tooLarge: example(413, 'body must not be larger than 16384 bytes', 'A body over BODY_LIMIT (16384 by default)'),
  tooLargeDecoded: example(413, 'body must not be larger than 16384 bytes once decoded',
    'A compressed body over BODY_LIMIT once decoded (decoding stops there)'),
  notJson: example(415, 'content-type must be application/json', 'Content-Type is not application/json'),
  unsupportedEncoding: example(415,
    'content-encoding "x-unknown" is not supported: send the body with one of gzip, deflate, br, or with none',
    'A Content-Encoding the service does not decode'),
  rateLimited: example(429, 'too many requests with this token: at most 600 per minute, retry in 42 s',
    'Over RATE_LIMIT_PER_MINUTE=600'),
  unexpected: example(500, 'internal server error', 'Anything unexpected: the detail is in the log only'),
  overloaded: example(503, 'the service is overloaded, retry later', 'Shed while overloaded'),
  storeUnavailable: example(503, 'the plant store is unavailable, retry later',
    'The store cannot be reached or refused the write: nothing was stored'),
  storeOutcomeUnknown: example(503, 'the plant store did not confirm the write: the outcome is unknown; ' +
    'retrying the identical request is safe, it answers 200 if the plant was stored',
  'The store lost the write after it was sent (PostgreSQL): it may be stored'),
  writesFailing: example(503, 'the service is not ready: creates have failed for 5210 ms with no success',
    'Creates have failed for longer than the statement timeout (PostgreSQL)'),
  notReady: example(503, 'the service is not ready', 'The store is unreachable or the service is shutting down'),
  storeFull: example(507, 'the plant store is full', 'The memory store holds MAX_PLANTS plants'),
  notHttp: example(400, 'the request is not valid HTTP', 'Malformed HTTP'),
  tooSlow: example(408, 'the request took too long to arrive',
    'Headers or body slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS'),
  headersTooLarge: example(431, 'request headers are too large', 'Headers over MAX_HEADER_BYTES'),
  missingHost: example(400, 'an HTTP/1.1 request must carry a Host header', 'An HTTP/1.1 request without Host'),
  duplicateHost: example(400, 'the request carries 2 Host headers: send exactly one', 'Two Host headers'),
  invalidHost: example(400, 'the Host header "a b@c" is not a valid host[:port]', 'A Host that is not host[:port]'),
  versionNotSupported: example(505, 'HTTP/2.0 is not supported: send HTTP/1.1',
    'A request line in another version than HTTP/1.x (HTTP/2.0 in cleartext)'),
  duplicateAuthorization: example(400, 'the request carries 2 Authorization headers: send exactly one',
    'Two Authorization headers (with WWW-Authenticate error="invalid_request")'),
  methodNotAllowed: example(405, 'GET is not allowed on /plants; allowed: POST, OPTIONS',
    'GET (or any method but POST and OPTIONS) on /plants'),
  expectationFailed: example(417,
    'the expectation "x-fancy" cannot be met: send no Expect header, or Expect: 100-continue',
    'Expect: x-fancy, once the token is accepted')
} satisfies Record<string, { summary: string, value: ErrorRecord }>
export type ErrorExampleName = keyof typeof errorExamples

const header = (description: string, example: string) => Type.String({ description, examples: [example] })
const count = (description: string, example: number) => Type.Integer({ minimum: 0, description, examples: [example] })
const RATE_LIMITED = 'Only with RATE_LIMIT_PER_MINUTE set: '

/** Headers a client reads by name, declared so that generated clients see them (the serializer ignores them). */
export const replyHeaders = {
  'x-request-id': header('The request\'s id, in every log line about it: the caller\'s own X-Request-Id when it is ' +
    '1 to 128 printable ASCII characters, else one the service made. ' +
    'Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists)', '4f3c2a1b9e8d7c6a-1'),
  'www-authenticate': header('The bearer challenge: `Bearer realm="plants"`, with `error="invalid_token"` when a ' +
    'token was sent and refused, `error="invalid_request"` (on a 400) when two Authorization headers were sent',
  'Bearer realm="plants", error="invalid_token"'),
  'retry-after': count('Seconds to wait before retrying', 1),
  allow: header('The methods the path answers to, on a 405 and on the 204 to OPTIONS: `POST, OPTIONS` for /plants, ' +
    '`GET, HEAD` for /livez and /readyz', 'POST, OPTIONS'),
  'accept-encoding': header('The content codings the service decodes, on a 415 for an unsupported Content-Encoding',
    'gzip, deflate, br'),
  'ratelimit-limit': count(`${RATE_LIMITED}requests allowed per window (a minute) for this client ` +
    '(IETF RateLimit header fields, draft)', 600),
  'ratelimit-remaining': count(`${RATE_LIMITED}requests left in the current window`, 599),
  'ratelimit-reset': count(`${RATE_LIMITED}seconds until the window resets`, 42)
}
export type ReplyHeaderName = keyof typeof replyHeaders

/** The `headers` of a response: x-request-id and the named ones. */
export const responseHeaders = (...names: ReplyHeaderName[]) =>
  Object.fromEntries((['x-request-id', ...names] as const).map((name) => [name, replyHeaders[name]]))

/**
 * An Error record response for a reply made before a request exists (errors.ts): no request id, so no header.
 * Its examples are by media type: a `$ref` can carry no sibling `examples`.
 */
export const bareErrorResponse = (description: string, names: ErrorExampleName[]) => {
  const examples = Object.fromEntries(names.map((name) => [name, errorExamples[name]]))
  return { description, content: { 'application/json': { schema: Type.Ref(ErrorRecord), examples } } }
}

/** The same with x-request-id and the named headers (between the description and the content in the document). */
export const errorResponse = (description: string, names: ErrorExampleName[], headers: ReplyHeaderName[] = []) =>
  ({ description, headers: responseHeaders(...headers), content: bareErrorResponse(description, names).content })

/** What any operation can meet before it runs; each probe's 4XX and the OPTIONS operation's. */
export const malformedHttpResponse = bareErrorResponse('Malformed HTTP (400), headers over MAX_HEADER_BYTES (431), ' +
  'or a request slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (408): the connection is closed; ' +
  'or no Host in HTTP/1.1, two Host headers, or one that is not host[:port] (400, with a request id)',
['notHttp', 'headersTooLarge', 'tooSlow', 'missingHost', 'duplicateHost', 'invalidHost'])

/** A request line that is not HTTP/1.x, for every operation of the document (plugins/openapi.ts). */
export const versionNotSupportedResponse = bareErrorResponse('The request line is not HTTP/1.x (HTTP/2.0 or HTTP/0.9 ' +
  'in cleartext, an HTTP/2 connection preface, a version the parser refuses): the connection is closed. ' +
  'The service speaks HTTP/1.1 and 1.0 only', ['versionNotSupported'])

export const Health = Type.Object({
  status: Type.String({
    description: '"ok" when the process is up, "ready" when it can serve',
    examples: ['ok', 'ready']
  })
}, { $id: 'Health', description: 'The answer of a probe', examples: [{ status: 'ok' }, { status: 'ready' }] })

/** The schemas that routes refer to with `Type.Ref`; registered once with `addSchema`. */
export const sharedSchemas: TSchema[] = [NewPlant, Plant, ErrorRecord, Health]
