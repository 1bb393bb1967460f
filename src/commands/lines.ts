import { parseBody } from '../plugins/json-body.js'
import { NewPlant } from '../schemas.js'
import { validatorCompiler } from '../validation.js'
import type { Row } from './store.js'

export interface Entry { line: number, key: string, row: Row }
export interface Position { bytes: number, read: number }

const validate = validatorCompiler({ schema: NewPlant, method: 'POST', url: '/plants', httpPart: 'body' })

/**
 * The plants of a JSON Lines input in batches, each line read as POST /plants reads a body (BODY_LIMIT, strict
 * UTF-8, exact int64 ids, the same validation); a refused line goes to `refuse` with the API's message.
 */
export async function * plantBatches (input: AsyncIterable<Buffer>, limit: number,
  refuse: (line: number, message: string) => void, at: Position): AsyncGenerator<Entry[]> {
  const batch: Entry[] = []
  const take = (text: Buffer, line: number): void => {
    at.bytes += text.length + 1
    if (text.length > 0 && ++at.read > 0) {
      try {
        if (text.length > limit) throw new Error(`body must not be larger than ${limit} bytes`)
        const { value, error } = validate(parseBody(text, undefined, limit)) as { value?: NewPlant, error?: Error }
        if (value === undefined) throw error
        batch.push({ line, key: String(value.id), row: { id: value.id, name: value.name, tag: value.tag ?? null } })
      } catch (error) {
        refuse(line, (error as Error).message)
      }
    }
  }
  let rest: Buffer = Buffer.alloc(0)
  let line = 0
  for await (const chunk of input) {
    const data = rest.length === 0 ? chunk : Buffer.concat([rest, chunk])
    let start = 0
    for (let end; (end = data.indexOf(10, start)) !== -1; start = end + 1) take(data.subarray(start, end), ++line)
    // A line past the limit is refused whatever follows: only its first bytes are kept, so memory stays flat.
    rest = data.subarray(start, start + limit + 1)
    if (batch.length >= 10000) yield batch.splice(0)
  }
  if (rest.length > 0) take(rest, ++line)
  yield batch
}
