import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { loadConfig } from '../../src/config/load-config.js'
import type { DocBlock } from './blocks.js'

/**
 * The checks that keep README.md and docs/ honest, as plain functions over text so that the tests can
 * show each one failing on a broken input as well as passing on the real files.
 */

/** The markdown outside fenced code blocks (a `# comment` in a shell block is no heading, `[a](b)` there no link). */
export function withoutCodeBlocks (markdown: string): string[] {
  const lines: string[] = []
  let fence: string | undefined
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence === undefined && marker !== undefined) fence = marker[0]
    else if (fence !== undefined && marker?.[0] === fence) fence = undefined
    else if (fence === undefined) lines.push(line)
  }
  return lines
}

/** The anchor GitHub gives a heading: lower-case, punctuation dropped, spaces as dashes (github-slugger). */
export function slug (heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link keeps its text
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-')
}

/** Every anchor a markdown file offers, duplicates numbered as GitHub numbers them (-1, -2, …). */
export function anchors (markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const result = new Set<string>()
  for (const line of withoutCodeBlocks(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]
    if (heading === undefined) continue
    const base = slug(heading)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    result.add(count === 0 ? base : `${base}-${count}`)
  }
  return result
}

/** The targets of the inline links `[text](target)` outside code. */
export function linkTargets (markdown: string): string[] {
  const targets: string[] = []
  for (const line of withoutCodeBlocks(markdown)) {
    // Inline code first: `[a](b)` inside backticks is text, not a link (a link's text may be code).
    const text = line.replace(/(?<!\[)`[^`]*`(?!\])/g, '')
    for (const match of text.matchAll(/\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(match[1] as string)
  }
  return targets
}

/** The relative links of one markdown file that lead nowhere: a missing file, or a missing anchor in a .md file. */
export function brokenLinks (file: string, markdown: string = readFileSync(file, 'utf8')): string[] {
  const broken: string[] = []
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // https:, mailto:: not ours to check
    const [path = '', anchor] = target.split('#', 2)
    const destination = path === '' ? file : resolve(dirname(file), decodeURIComponent(path))
    if (!existsSync(destination)) {
      broken.push(`${target}: no file ${relative(process.cwd(), destination)}`)
      continue
    }
    if (anchor === undefined || anchor === '') continue
    if (statSync(destination).isDirectory() || !destination.endsWith('.md')) {
      broken.push(`${target}: an anchor into a file that is not markdown`)
      continue
    }
    const text = destination === file ? markdown : readFileSync(destination, 'utf8')
    if (!anchors(text).has(decodeURIComponent(anchor))) broken.push(`${target}: no heading with the anchor #${anchor}`)
  }
  return broken
}

/** The lines that speak of how the work was organised (sessions, passes, agents, issue numbers), not of the service. */
export function workHistory (text: string): string[] {
  const pattern = /\b(sessions? of 20\d\d-|(first|second|third|fourth|fifth|sixth|this|last|previous|earlier|next) (session|pass)\b|(other |sub)agents?\b|issues? #?\d+\b)/i
  return text.split('\n').filter((line) => pattern.test(line))
}

/** The names in the first column of every table in a markdown file that look like environment variables. */
export function tableVariables (markdown: string): string[] {
  const names: string[] = []
  for (const line of withoutCodeBlocks(markdown)) {
    const cell = /^\|([^|]*)\|/.exec(line)?.[1]
    if (cell === undefined) continue
    for (const part of cell.split(',')) {
      const name = part.replace(/`/g, '').trim()
      if (/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|^[A-Z]{3,}$/.test(name)) names.push(name)
    }
  }
  return names
}

/** The cells of every table row whose first column names variables, by each name it names. */
export function tableRows (markdown: string): Map<string, string[]> {
  const rows = new Map<string, string[]>()
  for (const line of withoutCodeBlocks(markdown)) {
    if (!line.startsWith('|')) continue
    const cells = line.slice(1, line.endsWith('|') ? -1 : undefined).split('|').map((cell) => cell.trim())
    for (const name of tableVariables(line)) rows.set(name, cells)
  }
  return rows
}

/** What the configuration schema says of one variable: JSON Schema keywords, as TypeBox writes them. */
export interface SettingSchema { minimum?: number, maximum?: number, default?: unknown, pattern?: string }

/**
 * Where a table of variables disagrees with the schema: a default column that does not start with the
 * schema's default, a bounded number whose row does not give `min … max`, a choice (`^(a|b)$`) whose
 * row leaves out one of its values. Bounds at 2^53 − 1 are the page's general rule, not a row's.
 */
export function schemaMismatches (markdown: string, schema: Record<string, SettingSchema>): string[] {
  const rows = tableRows(markdown)
  const problems: string[] = []
  for (const [name, setting] of Object.entries(schema)) {
    const [, defaultCell = '', ...rest] = rows.get(name) ?? []
    const row = [defaultCell, ...rest].join(' | ')
    if (setting.default !== undefined && !defaultCell.startsWith(`\`${String(setting.default)}\``)) {
      problems.push(`${name}: default ${String(setting.default)}`)
    }
    if (setting.maximum !== undefined && setting.maximum < Number.MAX_SAFE_INTEGER &&
      !row.includes(`${setting.minimum} … ${setting.maximum}`)) problems.push(`${name}: ${setting.minimum} … ${setting.maximum}`)
    const choices = /^\^\(([^()]*)\)\$$/.exec(setting.pattern ?? '')?.[1]?.split('|') ?? []
    for (const choice of choices) if (!row.includes(`\`${choice}\``)) problems.push(`${name}: ${choice}`)
  }
  return problems
}

const noMemoryLimit = { memoryLimit: () => undefined }
/** Valid settings the probes start from: with a metrics listener and a rate limit on, what they switch on is read too. */
const BASES: NodeJS.ProcessEnv[] = [
  { API_TOKENS: 'a-token-of-sixteen-characters' },
  { API_TOKENS: 'a-token-of-sixteen-characters', METRICS_PORT: '9464', RATE_LIMIT_PER_MINUTE: '10', DATABASE_URL: 'postgres://db.invalid/plants' }
]
/** Values at least one of which any read variable either takes (the config changes) or refuses (ConfigError). */
const PROBES = ['', 'x', '1', '12345', 'on', 'https://probe.example', 'redis://probe.example']

type Outcome = { config: unknown } | { error: string }
function outcome (env: NodeJS.ProcessEnv, load: typeof loadConfig): Outcome {
  try {
    return { config: load(env, noMemoryLimit) }
  } catch (error) {
    return { error: String(error) }
  }
}

/**
 * Whether loadConfig reads an environment variable, found by behaviour rather than by reading the source
 * (which may be split or rewritten): the variable is read if some probe value, added to a valid
 * environment, changes the configuration or makes it refuse to start.
 */
export function configReads (name: string, load: typeof loadConfig = loadConfig): boolean {
  return BASES.some((base) => {
    const before = outcome(base, load)
    return PROBES.some((value) => !isDeepStrictEqual(outcome({ ...base, [name]: value }, load), before))
  })
}

/** The upper-case words of the service's sources: every environment variable it reads is among them. */
export function candidateNames (root: string): Set<string> {
  const names = new Set<string>()
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) visit(path)
      else if (entry.name.endsWith('.ts')) {
        for (const match of readFileSync(path, 'utf8').matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b/g)) names.add(match[0])
      }
    }
  }
  visit(root)
  return names
}

/**
 * The languages of a block that shows something and is never pasted (a reply, an output). A block in
 * any other language (sh, sql, yaml, ini, haproxy, ts…) is pasted somewhere, so it is run by a test,
 * unless it is named `excerpt`: part of a larger file, which the text around it names.
 */
export const SHOWN_LANGUAGES = new Set(['text', 'json'])
export const EXCERPT = 'excerpt'

/** The runnable blocks of a page that carry no name (so no test can find and run them), as `file:line lang`. */
export function unnamedRunnableBlocks (file: string, blocks: readonly DocBlock[]): string[] {
  return blocks.filter((block) => !SHOWN_LANGUAGES.has(block.lang) && block.name === undefined)
    .map((block) => `${file}:${block.line} ${block.lang}`)
}

/** Every call of docBlock with a page and a name as literal strings in a source text, as `file#name`. */
export function docBlockCalls (source: string): string[] {
  return [...source.matchAll(/\bdocBlock\s*\(\s*(['"])([^'"]+)\1\s*,\s*(['"])([^'"]+)\3\s*\)/g)].map((match) => `${match[2]}#${match[4]}`)
}

/** The named blocks of a page no call runs, and the names the page gives twice, as `file#name`. */
export function unrunBlocks (file: string, blocks: readonly DocBlock[], calls: ReadonlySet<string>): string[] {
  const names = blocks.flatMap((block) => block.name === undefined || block.name === EXCERPT ? [] : [`${file}#${block.name}`])
  return names.filter((name, index) => !calls.has(name) || names.indexOf(name) !== index)
}
