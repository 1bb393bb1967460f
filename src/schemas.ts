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
const Int64 = (options: { description: string }): TUnsafe<PlantId> =>
  Type.Unsafe<PlantId>({ [Kind]: 'Int64', type: 'integer', format: 'int64', ...options })

/**
 * Text that every store keeps exactly: no U+0000 (PostgreSQL text cannot hold it) and no lone
 * surrogate (UTF-8 encoders replace it with U+FFFD). Surrogates may only come as a high-low pair;
 * the pattern means the same with and without the regular expression's `u` flag.
 */
export const STORABLE_TEXT = '^(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$'
const Text = (description: string) => Type.String({ pattern: STORABLE_TEXT, description })

export const Plant = Type.Object({
  name: Text('The name of the plant'),
  tag: Type.Optional(Text('Tag that specifies the type of the plant'))
}, { $id: 'Plant', description: 'A plant of the store' })
export type Plant = Static<typeof Plant>

export const NewPlant = Type.Object({
  id: Int64({ description: `Identification number of the plant: an integer from ${INT64_MIN} to ${INT64_MAX}, exact over the whole range` }),
  name: Plant.properties.name,
  tag: Plant.properties.tag
}, { $id: 'NewPlant', description: 'A plant to create. Properties other than id, name and tag are accepted and ignored.' })
export type NewPlant = Static<typeof NewPlant>

export const ErrorRecord = Type.Object({
  error: Type.Integer({ format: 'int32', description: 'The HTTP status code of the reply' }),
  message: Type.String({ description: 'What went wrong, for a person; generic for 5xx statuses' })
}, { $id: 'Error', description: 'Every non-2xx reply' })
export type ErrorRecord = Static<typeof ErrorRecord>

export const Health = Type.Object({
  status: Type.String({ description: '"ok" when the process is up, "ready" when it can serve' })
}, { $id: 'Health' })

/** The schemas that routes refer to with `Type.Ref`; registered once with `addSchema`. */
export const sharedSchemas: TSchema[] = [NewPlant, Plant, ErrorRecord, Health]
