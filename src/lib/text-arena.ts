/** Bytes per chunk: a record never spans two; one larger than this gets a chunk of its own. */
const CHUNK_BYTES = 4 * 1024 * 1024
/** Record header: the name's UTF-8 length (uint32), then the tag's (int32, −1 for no tag). */
const HEADER_BYTES = 8
const NO_TAG = -1

/**
 * Pairs of texts (a plant's name and optional tag) kept as UTF-8 bytes in chunks of memory outside
 * the JS heap, appended and never moved; each is found again by the number add() returned. The
 * memory store keeps its plants here rather than as JS strings, so the garbage collector has nothing
 * per stored plant to copy or mark (bench/README.md, "What each feature costs").
 *
 * Texts must be well-formed UTF-16 (no unpaired surrogate, which UTF-8 cannot carry): the
 * service's schema guarantees it, and add() refuses anything else rather than store it changed.
 */
export class TextArena {
  #chunks: Buffer[] = []
  #chunk: Buffer = Buffer.alloc(0)
  #used = 0
  #bytes = 0

  /** Bytes the stored texts take (UTF-8 and an 8-byte header each): what add() has written. */
  get byteLength (): number { return this.#bytes }

  /** Stores a name and an optional tag; the handle is a non-negative integer. */
  add (name: string, tag: string | undefined): number {
    if (!name.isWellFormed() || (tag !== undefined && !tag.isWellFormed())) {
      throw new TypeError('TextArena stores well-formed text only (no unpaired surrogates)')
    }
    // UTF-8 takes at most 3 bytes per UTF-16 code unit: reserve that, write, keep what was used.
    const reserve = HEADER_BYTES + 3 * (name.length + (tag?.length ?? 0))
    // A record starts below CHUNK_BYTES (the handle's arithmetic); it may end beyond it only in a
    // chunk made larger for it.
    if (this.#used + reserve > this.#chunk.length || this.#used >= CHUNK_BYTES) {
      // Not zero-filled: only bytes that add() wrote are ever read.
      this.#chunk = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, reserve))
      this.#chunks.push(this.#chunk)
      this.#used = 0
    }
    const chunk = this.#chunk
    const start = this.#used
    const nameBytes = chunk.write(name, start + HEADER_BYTES)
    const tagBytes = tag === undefined ? 0 : chunk.write(tag, start + HEADER_BYTES + nameBytes)
    chunk.writeUInt32LE(nameBytes, start)
    chunk.writeInt32LE(tag === undefined ? NO_TAG : tagBytes, start + 4)
    this.#used = start + HEADER_BYTES + nameBytes + tagBytes
    this.#bytes += HEADER_BYTES + nameBytes + tagBytes
    return (this.#chunks.length - 1) * CHUNK_BYTES + start
  }

  /** The name and tag stored under a handle that add() returned. */
  read (handle: number): { name: string, tag?: string } {
    const chunk = this.#chunks[Math.floor(handle / CHUNK_BYTES)] as Buffer
    const start = handle % CHUNK_BYTES
    const nameEnd = start + HEADER_BYTES + chunk.readUInt32LE(start)
    const tagBytes = chunk.readInt32LE(start + 4)
    const name = chunk.toString('utf8', start + HEADER_BYTES, nameEnd)
    return tagBytes === NO_TAG ? { name } : { name, tag: chunk.toString('utf8', nameEnd, nameEnd + tagBytes) }
  }
}
