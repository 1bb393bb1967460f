// Types of scripts/openapi.mjs, for the test that compares the committed files with fresh ones.
export const DOCUMENT_FILE: string
export const TYPES_FILE: string
/** The command that rewrites both committed files. */
export const REGENERATE: string
export function documentText (document: unknown): string
export function typesText (documentText: string): Promise<string>
