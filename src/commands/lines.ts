import { parseBody } from '../plugins/json-body.js'
import { NewPlant } from '../schemas.js'
import { validatorCompiler } from '../validation.js'
import type { Row } from './store.js'

export interface Entry { line: number, key: string, row: Row }
/** Where a read stands, for progress. */
export interface Position { bytes: number, read: number }

const validate = validatorCompiler({ schema: NewPlant, method: 'POST', url: '/plants', httpPart: 'body' })

/**
 * The plants of a JSON Lines input in batches, each line read and validated as POST /plants reads a body
 * (strict UTF-8, exact int64 ids, BODY_LIMIT); a refused line goes to `refuse` with the API's message.
 */
export async function * plantBatches (input: AsyncIterable<Buffer>, limit: number, size: number,
  refuse: (line: number, message: string) => void, at: Position = { bytes: 0, read: 0 }): AsyncGenerator<Entry[]> {
  let batch: Entry[] = []
  let line = 0
  const take = (text: Buffer): void => {
    line++
    at.bytes += text.length + 1
    if (text.length === 0) return
    at.read++
    try {
      if (text.length > limit) throw new Error(`body must not be larger than ${limit} bytes`)
      const { value, error } = validate(parseBody(text, undefined, limit)) as { value?: NewPlant, error?: Error }
      if (value === undefined) throw error
      batch.push({ line, key: String(value.id), row: { id: value.id, name: value.name, tag: value.tag ?? null } })
    } catch (error) {
      refuse(line, (error as Error).message)
    }
  }
  let rest: Buffer = Buffer.alloc(0)
  for await (const chunk of input) {
    const data = rest.length === 0 ? chunk : Buffer.concat([rest, chunk])
    let start = 0
    for (let end; (end = data.indexOf(10, start)) !== -1; start = end + 1) take(data.subarray(start, end))
    // A line past the limit is refused whatever follows: only its first bytes are kept, so memory stays flat.
    rest = data.subarray(start, start + limit + 1)
    if (batch.length >= size) {
      yield batch
      batch = []
    }
  }
  if (rest.length > 0) take(rest)
  if (batch.length > 0) yield batch
}
