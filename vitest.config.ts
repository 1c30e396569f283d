import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Files start their own redis-server and servers; two cores run them best two at a time.
    pool: 'forks',
    maxWorkers: 2,
  },
});
