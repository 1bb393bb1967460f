import neostandard from 'neostandard'
import tseslint from 'typescript-eslint'

export default [
  // openapi/plant-store.d.ts is generated (npm run openapi).
  {
    ignores: ['dist/', 'client/dist/', 'coverage/', 'bench/results/', 'node_modules/', 'openapi/plant-store.d.ts', '.stryker-tmp/', 'reports/']
  },
  // The Fastify ecosystem's formatting and rules, TypeScript included.
  ...neostandard({ ts: true }),
  ...tseslint.configs.strict,
  {
    rules: {
      'no-console': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      // A TypeBox schema and its Static type share the spec's name (STYLE.md).
      '@typescript-eslint/no-redeclare': 'off',
      // A statement-level `void promise` marks a promise left unawaited on purpose.
      'no-void': ['error', { allowAsStatement: true }]
    }
  },
  {
    // No tool directives in src/: an equivalent mutant counts as a survivor, and lint speaks for itself.
    files: ['src/**'],
    linterOptions: { noInlineConfig: true },
    rules: {
      '@stylistic/max-len': ['error', { code: 120, ignoreUrls: true }],
      'no-warning-comments': ['error', { terms: ['stryker disable', 'stryker restore'], location: 'anywhere' }]
    }
  },
  {
    files: ['bench/**', 'test/**', 'scripts/**'],
    // Loops there wait on flags that child-process and timer callbacks set, which the rule cannot see.
    rules: { 'no-console': 'off', 'no-unmodified-loop-condition': 'off' }
  },
  {
    // A regular expression stays whole: it is one token, the message it matches.
    files: ['test/**'],
    rules: { '@stylistic/max-len': ['error', { code: 160, ignoreUrls: true, ignoreRegExpLiterals: true }] }
  }
]
