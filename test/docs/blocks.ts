import { readFileSync } from 'node:fs'

/**
 * The fenced blocks of a markdown page. A block a user would paste names itself after its language
 * (```sh rotate-tokens-docker): GitHub reads only the first word, and a test finds the block by that
 * name and runs it, so that a page's recipes are code (test/docs checks that each one is run).
 */
export interface DocBlock {
  lang: string
  name: string | undefined
  text: string
  /** The 1-based line of the opening fence. */
  line: number
}

export function docBlocks (file: string): DocBlock[] {
  return parseDocBlocks(readFileSync(file, 'utf8'))
}

/** The fenced blocks of markdown text. */
export function parseDocBlocks (markdown: string): DocBlock[] {
  const blocks: DocBlock[] = []
  let open: { fence: string, lang: string, name: string | undefined, line: number, body: string[] } | undefined
  markdown.split('\n').forEach((line, index) => {
    const fence = /^\s*(`{3,}|~{3,})\s*([\w+-]*)\s*(\S*)/.exec(line)
    if (open === undefined && fence !== null) {
      open = { fence: fence[1] as string, lang: fence[2] ?? '', name: fence[3] === '' ? undefined : fence[3], line: index + 1, body: [] }
    } else if (open !== undefined && fence !== null && fence[1] === open.fence && fence[2] === '') {
      blocks.push({ lang: open.lang, name: open.name, text: open.body.join('\n') + '\n', line: open.line })
      open = undefined
    } else open?.body.push(line)
  })
  return blocks
}

/** The text of the block named `name` in `file`; throws when the page has no such block. */
export function docBlock (file: string, name: string): string {
  const block = docBlocks(file).find((candidate) => candidate.name === name)
  if (block === undefined) throw new Error(`${file} has no block named ${name}`)
  return block.text
}
