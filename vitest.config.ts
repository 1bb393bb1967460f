import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // End-to-end tests start the built server; `npm test` builds first (pretest).
    testTimeout: 20000,
    hookTimeout: 30000,
    reporters: ['default'],
    pool: 'forks'
  }
})
