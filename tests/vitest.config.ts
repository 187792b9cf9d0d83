import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // A test that asserts nothing fails: it would pass whatever the code did.
    expect: { requireAssertions: true },
    include: ["src/**/*.test.ts"],
    testTimeout: 30_000,
  },
});
