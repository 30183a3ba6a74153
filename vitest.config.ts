import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'e2e/**/*.test.ts', 'chaos/**/*.test.ts'],
    globalSetup: ['./vitest.setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // two cores: more forks only make the crash and concurrency tests slower
    maxWorkers: 2,
  },
});
