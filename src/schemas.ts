import { Kind, Type, TypeRegistry, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox'

/** The int64 range. Ids are exact over all of it: never a lossy JS number beyond ±(2^53 − 1). */
export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

/**
 * An id as it travels inside the service: a number when it is a safe integer, a bigint otherwise.
 * The JSON body parser produces exactly this canonical form, so `5` and `5n` never both occur.
 */
export type PlantId = number | bigint

TypeRegistry.Set('Int64', (_schema: unknown, value: unknown) =>
  typeof value === 'number'
    ? Number.isSafeInteger(value)
    : typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX)

/**
 * A JSON Schema `integer/int64` for documents, checked by the custom `Int64` kind above (JSON Schema
 * validators cannot see bigints). Its range goes in the description, not in minimum/maximum:
 * 9223372036854775807 has no exact JSON number in JavaScript and would be published rounded.
 */
const Int64 = (options: { description: string, examples?: number[] }): TUnsafe<PlantId> =>
  Type.Unsafe<PlantId>({ [Kind]: 'Int64', type: 'integer', format: 'int64', ...options })

/**
 * Text that every store keeps exactly: no U+0000 (PostgreSQL text cannot hold it) and no lone
 * surrogate (UTF-8 encoders replace it with U+FFFD). Surrogates may only come as a high-low pair;
 * the pattern means the same with and without the regular expression's `u` flag.
 */
export const STORABLE_TEXT = '^(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$'

/**
 * What the published document says in place of STORABLE_TEXT (plugins/openapi.ts): surrogate escapes
 * compile only in JavaScript (ECMA-262 regular expressions match UTF-16 code units; Rust's, Go's and
 * Java's match code points, and Rust refuses `\uD800` outright), so validators and generators in other
 * languages could not compile the document. What every dialect can say is kept (no U+0000); the rest
 * of the rule is in the description (STORABLE_TEXT_RULE), and the service still checks all of it.
 */
export const PORTABLE_TEXT = '^[^\\u0000]*$'
const STORABLE_TEXT_RULE = 'No U+0000 and no unpaired surrogate (a \\uD800-\\uDFFF escape that is not a high-low pair): the service refuses either with 400'
const Text = (description: string, example: string) => Type.String({ pattern: STORABLE_TEXT, description: `${description}. ${STORABLE_TEXT_RULE}`, examples: [example] })

/*
 * Examples: what the document shows and what the docs page offers to send (Swagger UI builds a body
 * from the schema's `examples`). A realistic plant, the one the curl examples of README.md and docs/api.md use.
 */
export const Plant = Type.Object({
  name: Text('The name of the plant', 'Monstera'),
  tag: Type.Optional(Text('Tag that specifies the type of the plant', 'tropical'))
}, { $id: 'Plant', description: 'A plant of the store', examples: [{ name: 'Monstera', tag: 'tropical' }] })
export type Plant = Static<typeof Plant>

export const NewPlant = Type.Object({
  id: Int64({ description: `Identification number of the plant: an integer from ${INT64_MIN} to ${INT64_MAX}, exact over the whole range`, examples: [10] }),
  name: Plant.properties.name,
  tag: Plant.properties.tag
}, {
  $id: 'NewPlant',
  description: 'A plant to create. Properties other than id, name and tag are accepted and ignored, at any depth: `__proto__` and `constructor.prototype` keys too, which are dropped as the body is parsed (they never reach an object).',
  examples: [{ id: 10, name: 'Monstera', tag: 'tropical' }]
})
export type NewPlant = Static<typeof NewPlant>

export const ErrorRecord = Type.Object({
  error: Type.Integer({ format: 'int32', description: 'The HTTP status code of the reply', examples: [409] }),
  message: Type.String({ description: 'What went wrong, for a person; generic for 5xx statuses', examples: ['a plant with id 10 already exists with another name or tag'] })
}, { $id: 'Error', description: 'Every non-2xx reply', examples: [{ error: 409, message: 'a plant with id 10 already exists with another name or tag' }] })
export type ErrorRecord = Static<typeof ErrorRecord>

/**
 * Error records the service really answers, by name, for the document to show next to each response
 * (test/openapi/examples.test.ts provokes each one and compares it with the reply).
 */
export const errorExamples = {
  invalidId: { summary: 'A string is not an id (no type coercion)', value: { error: 400, message: `body/id must be an integer between ${INT64_MIN} and ${INT64_MAX}` } },
  invalidGzip: { summary: 'Content-Encoding: gzip on a body that is not gzip', value: { error: 400, message: 'body is not valid gzip data' } },
  missingToken: { summary: 'No bearer token', value: { error: 401, message: 'a bearer token is required: send "Authorization: Bearer <token>"' } },
  invalidToken: { summary: 'A token that is not accepted', value: { error: 401, message: 'the bearer token is not valid' } },
  conflict: { summary: 'Id 10 is stored with another name or tag', value: { error: 409, message: 'a plant with id 10 already exists with another name or tag' } },
  tooLarge: { summary: 'A body over BODY_LIMIT (16384 by default)', value: { error: 413, message: 'body must not be larger than 16384 bytes' } },
  tooLargeDecoded: { summary: 'A compressed body over BODY_LIMIT once decoded (decoding stops there)', value: { error: 413, message: 'body must not be larger than 16384 bytes once decoded' } },
  notJson: { summary: 'Content-Type is not application/json', value: { error: 415, message: 'content-type must be application/json' } },
  unsupportedEncoding: { summary: 'A Content-Encoding the service does not decode', value: { error: 415, message: 'content-encoding "x-unknown" is not supported: send the body with one of gzip, deflate, br, or with none' } },
  rateLimited: { summary: 'Over RATE_LIMIT_PER_MINUTE=600', value: { error: 429, message: 'too many requests with this token: at most 600 per minute, retry in 42 s' } },
  unexpected: { summary: 'Anything unexpected: the detail is in the log only', value: { error: 500, message: 'internal server error' } },
  overloaded: { summary: 'Shed while overloaded', value: { error: 503, message: 'the service is overloaded, retry later' } },
  storeUnavailable: { summary: 'The store cannot be reached or refused the write: nothing was stored', value: { error: 503, message: 'the plant store is unavailable, retry later' } },
  storeOutcomeUnknown: { summary: 'The store lost the write after it was sent (PostgreSQL): it may be stored', value: { error: 503, message: 'the plant store did not confirm the write: the outcome is unknown; retrying the identical request is safe, it answers 200 if the plant was stored' } },
  writesFailing: { summary: 'Creates have failed for longer than the statement timeout (PostgreSQL)', value: { error: 503, message: 'the service is not ready: creates have failed for 5210 ms with no success' } },
  notReady: { summary: 'The store is unreachable or the service is shutting down', value: { error: 503, message: 'the service is not ready' } },
  storeFull: { summary: 'The memory store holds MAX_PLANTS plants', value: { error: 507, message: 'the plant store is full' } },
  notHttp: { summary: 'Malformed HTTP', value: { error: 400, message: 'the request is not valid HTTP' } },
  tooSlow: { summary: 'Headers or body slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS', value: { error: 408, message: 'the request took too long to arrive' } },
  headersTooLarge: { summary: 'Headers over MAX_HEADER_BYTES', value: { error: 431, message: 'request headers are too large' } },
  missingHost: { summary: 'An HTTP/1.1 request without Host', value: { error: 400, message: 'an HTTP/1.1 request must carry a Host header' } },
  duplicateHost: { summary: 'Two Host headers', value: { error: 400, message: 'the request carries 2 Host headers: send exactly one' } },
  invalidHost: { summary: 'A Host that is not host[:port]', value: { error: 400, message: 'the Host header "a b@c" is not a valid host[:port]' } },
  versionNotSupported: { summary: 'A request line in another version than HTTP/1.x (HTTP/2.0 in cleartext)', value: { error: 505, message: 'HTTP/2.0 is not supported: send HTTP/1.1' } },
  duplicateAuthorization: { summary: 'Two Authorization headers (with WWW-Authenticate error="invalid_request")', value: { error: 400, message: 'the request carries 2 Authorization headers: send exactly one' } },
  methodNotAllowed: { summary: 'GET (or any method but POST and OPTIONS) on /plants', value: { error: 405, message: 'GET is not allowed on /plants; allowed: POST, OPTIONS' } },
  expectationFailed: { summary: 'Expect: x-fancy, once the token is accepted', value: { error: 417, message: 'the expectation "x-fancy" cannot be met: send no Expect header, or Expect: 100-continue' } }
} satisfies Record<string, { summary: string, value: ErrorRecord }>
export type ErrorExampleName = keyof typeof errorExamples

/**
 * Response headers a client reads by name, declared in the document (a response's `headers`, which
 * @fastify/swagger turns into OpenAPI header objects; Fastify's serializer ignores them), so that
 * generated clients can read them. Every response carries `x-request-id` (responseHeaders adds it).
 */
export const replyHeaders = {
  'x-request-id': Type.String({ description: 'The request\'s id, in every log line about it: the caller\'s own X-Request-Id when it is 1 to 128 printable ASCII characters, else one the service made. Absent only on the replies to malformed HTTP (400, 408, 431 made before a request exists)', examples: ['4f3c2a1b9e8d7c6a-1'] }),
  'www-authenticate': Type.String({ description: 'The bearer challenge: `Bearer realm="plants"`, with `error="invalid_token"` when a token was sent and refused, `error="invalid_request"` (on a 400) when two Authorization headers were sent', examples: ['Bearer realm="plants", error="invalid_token"'] }),
  'retry-after': Type.Integer({ minimum: 0, description: 'Seconds to wait before retrying', examples: [1] }),
  allow: Type.String({ description: 'The methods the path answers to, on a 405 and on the 204 to OPTIONS: `POST, OPTIONS` for /plants, `GET, HEAD` for /livez and /readyz', examples: ['POST, OPTIONS'] }),
  'accept-encoding': Type.String({ description: 'The content codings the service decodes, on a 415 for an unsupported Content-Encoding', examples: ['gzip, deflate, br'] }),
  'ratelimit-limit': Type.Integer({ minimum: 0, description: 'Only with RATE_LIMIT_PER_MINUTE set: requests allowed per window (a minute) for this client (IETF RateLimit header fields, draft)', examples: [600] }),
  'ratelimit-remaining': Type.Integer({ minimum: 0, description: 'Only with RATE_LIMIT_PER_MINUTE set: requests left in the current window', examples: [599] }),
  'ratelimit-reset': Type.Integer({ minimum: 0, description: 'Only with RATE_LIMIT_PER_MINUTE set: seconds until the window resets', examples: [42] })
}
export type ReplyHeaderName = keyof typeof replyHeaders

/** The `headers` of a response: x-request-id and the named ones. */
export const responseHeaders = (...names: ReplyHeaderName[]) =>
  Object.fromEntries((['x-request-id', ...names] as const).map((name) => [name, replyHeaders[name]]))

/** The media type of an Error record, with the named examples of it. */
const errorContent = (names: ErrorExampleName[]) => ({
  'application/json': {
    schema: Type.Ref(ErrorRecord),
    examples: Object.fromEntries(names.map((name) => [name, errorExamples[name]]))
  }
})

/**
 * A response that is an Error record, with examples of it and the headers it carries. Written by
 * media type because a `$ref` can carry no siblings: the media type's `examples` go to the document
 * as they are (@fastify/swagger), where Swagger UI and Redocly list them by summary; Fastify
 * serializes by the `schema`.
 */
export const errorResponse = (description: string, names: ErrorExampleName[], headers: ReplyHeaderName[] = []) =>
  ({ description, headers: responseHeaders(...headers), content: errorContent(names) })

/** The same for a reply made before a request exists (errors.ts, clientErrorHandler): no request id, so no header. */
export const bareErrorResponse = (description: string, names: ErrorExampleName[]) =>
  ({ description, content: errorContent(names) })

/**
 * What any operation can meet before it runs: answered for any path before a request exists
 * (errors.ts, clientErrorHandler), so with no request id. Documented as each probe's 4XX (a probe never answers
 * 4xx itself) and the OPTIONS operation's.
 */
export const malformedHttpResponse = bareErrorResponse('Malformed HTTP (400), headers over MAX_HEADER_BYTES (431), or a request slower than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (408): the connection is closed; ' +
  'or no Host in HTTP/1.1, two Host headers, or one that is not host[:port] (400, with a request id)', ['notHttp', 'headersTooLarge', 'tooSlow', 'missingHost', 'duplicateHost', 'invalidHost'])

/**
 * What any operation answers to a request line in another version than HTTP/1.x, before it runs
 * (plugins/edge-refusals.ts, errors.ts): added to every operation of the document (plugins/openapi.ts).
 */
export const versionNotSupportedResponse = bareErrorResponse('The request line is not HTTP/1.x (HTTP/2.0 or HTTP/0.9 in cleartext, an HTTP/2 connection preface, a version the parser refuses): the connection is closed. ' +
  'The service speaks HTTP/1.1 and 1.0 only', ['versionNotSupported'])

export const Health = Type.Object({
  status: Type.String({ description: '"ok" when the process is up, "ready" when it can serve', examples: ['ok', 'ready'] })
}, { $id: 'Health', description: 'The answer of a probe', examples: [{ status: 'ok' }, { status: 'ready' }] })

/** The schemas that routes refer to with `Type.Ref`; registered once with `addSchema`. */
export const sharedSchemas: TSchema[] = [NewPlant, Plant, ErrorRecord, Health]
