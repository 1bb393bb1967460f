import { Kind, Type, TypeRegistry, type Static, type TSchema } from '@sinclair/typebox'

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

/** A number when it is a safe integer, else a bigint: the body parser's one form, so 5 and 5n never both occur. */
export type PlantId = number | bigint
export const plantId = (id: bigint): PlantId => Number.isSafeInteger(Number(id)) ? Number(id) : id

TypeRegistry.Set('Int64', (_schema: unknown, value: unknown) =>
  Number.isSafeInteger(value) || (typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX))

/**
 * Text every store keeps exactly: no U+0000 (PostgreSQL text cannot hold it) and no lone surrogate (UTF-8 encoders
 * replace it). The published pattern says the first (Rust's regular expressions refuse surrogates); words, the rest.
 */
TypeRegistry.Set('StorableText', (_schema: unknown, value: unknown) =>
  typeof value === 'string' && value.isWellFormed() && !value.includes('\0'))
export const PORTABLE_TEXT = '^[^\\u0000]*$'
const STORABLE_TEXT_RULE = 'No U+0000 and no unpaired surrogate: the service refuses either with 400'
const Text = (description: string, example: string) => Type.Unsafe<string>({
  ...Type.String({ pattern: PORTABLE_TEXT, description: `${description}. ${STORABLE_TEXT_RULE}`, examples: [example] }),
  [Kind]: 'StorableText'
})

// The examples are what the docs page sends (Swagger UI builds a body from them) and what the curl examples use.
export const Plant = Type.Object({
  name: Text('The name of the plant', 'Monstera'),
  tag: Type.Optional(Text('Tag that specifies the type of the plant', 'tropical'))
}, { $id: 'Plant', description: 'A plant of the store', examples: [{ name: 'Monstera', tag: 'tropical' }] })
export type Plant = Static<typeof Plant>

/**
 * `integer/int64` for the document, checked by the `Int64` kind (JSON Schema validators cannot see bigints).
 * The range is in the description: 2^63 - 1 has no exact JavaScript number and would be published rounded.
 */
const ID = `Identification number of the plant: an exact integer from ${INT64_MIN} to ${INT64_MAX}`
export const NewPlant = Type.Object({
  id: Type.Unsafe<PlantId>({ [Kind]: 'Int64', type: 'integer', format: 'int64', description: ID, examples: [10] }),
  ...Plant.properties
}, {
  $id: 'NewPlant',
  description: 'A plant to create; properties other than id, name and tag are accepted and ignored',
  examples: [{ id: 10, name: 'Monstera', tag: 'tropical' }]
})
export type NewPlant = Static<typeof NewPlant>

export const CONFLICT = 'a plant with id 10 already exists with another name or tag'
export const ErrorRecord = Type.Object({
  error: Type.Integer({ format: 'int32', description: 'The HTTP status code of the reply', examples: [409] }),
  message: Type.String({ description: 'What went wrong, for a person; generic for 5xx statuses', examples: [CONFLICT] })
}, { $id: 'Error', description: 'Every non-2xx reply', examples: [{ error: 409, message: CONFLICT }] })
export type ErrorRecord = Static<typeof ErrorRecord>

const header = (description: string) => Type.String({ description })
const count = (description: string) => Type.Integer({ minimum: 0, description })

/** Headers a client reads by name, declared so that generated clients see them (the serializer ignores them). */
const replyHeaders = {
  'x-request-id': header('The caller\'s X-Request-Id when it is 1 to 128 printable ASCII characters, else a new id'),
  'www-authenticate': header('`Bearer realm="plants"`, with `error="invalid_token"` when a token was refused'),
  'retry-after': count('Seconds to wait before retrying'),
  'accept-encoding': header('The content codings the service decodes: gzip, deflate, br'),
  'ratelimit-limit': count('With RATE_LIMIT_PER_MINUTE: the requests allowed per minute for this client'),
  'ratelimit-remaining': count('With RATE_LIMIT_PER_MINUTE: the requests left in the current minute'),
  'ratelimit-reset': count('With RATE_LIMIT_PER_MINUTE: the seconds until the minute resets')
}
type ReplyHeaderName = keyof typeof replyHeaders

/** A JSON response of a shared schema, with x-request-id and the named headers. */
export const jsonResponse = (description: string, schema: TSchema, headers: readonly ReplyHeaderName[] = [],
  examples?: Record<string, { value: ErrorRecord }>) => ({
  description,
  headers: Object.fromEntries((['x-request-id', ...headers] as const).map((name) => [name, replyHeaders[name]])),
  content: { 'application/json': { schema: Type.Ref(schema), examples } }
})

/** An Error record response, with a reply the service really gives (test/openapi/examples.test.ts provokes each). */
export const errorResponse = (status: number, description: string, message: string, headers?: ReplyHeaderName[]) =>
  jsonResponse(description, ErrorRecord, headers, { [status]: { value: { error: status, message } } })

export const Health = Type.Object({
  status: Type.String({ description: '"ok" when the process is up, "ready" when it can serve' })
}, { $id: 'Health', description: 'The answer of a probe', examples: [{ status: 'ok' }, { status: 'ready' }] })

/** The schemas that routes refer to with `Type.Ref`; registered once with `addSchema`. */
export const sharedSchemas: TSchema[] = [NewPlant, Plant, ErrorRecord, Health]
