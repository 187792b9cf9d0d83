import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // A test that asserts nothing fails: it would pass whatever the code did.
    expect: { requireAssertions: true },
    include: ["src/**/*.test.ts"],
    typecheck: { include: ["src/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
    // The stdio suites start a child per test; under load that alone can take seconds.
    testTimeout: 60_000,
  },
});
