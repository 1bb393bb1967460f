import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  // openapi/plant-store.d.ts is generated (npm run openapi).
  { ignores: ['dist/', 'coverage/', 'bench/results/', 'node_modules/', 'openapi/plant-store.d.ts', '.stryker-tmp/', 'reports/'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', AbortController: 'readonly', fetch: 'readonly' }
    },
    rules: {
      'no-console': 'error',
      '@typescript-eslint/consistent-type-imports': 'error'
    }
  },
  {
    files: ['bench/**', 'test/**'],
    rules: { 'no-console': 'off' }
  },
  {
    // Operator scripts (overload, soak) print their reports.
    files: ['scripts/**'],
    languageOptions: { globals: { performance: 'readonly' } },
    rules: { 'no-console': 'off' }
  }
)
