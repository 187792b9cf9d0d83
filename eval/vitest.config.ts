import { defineConfig } from "vitest/config";

export default defineConfig({
  // Workspace packages resolve to their TypeScript sources (export condition "@toolgate/source"), never a stale dist.
  ssr: { resolve: { conditions: ["@toolgate/source"] } },
  test: {
    // A test that asserts nothing fails: it would pass whatever the code did.
    expect: { requireAssertions: true },
    include: ["src/**/*.test.ts"],
    testTimeout: 120_000,
  },
});
