import { defineConfig } from "vitest/config";

export default defineConfig({
  // Workspace packages resolve to their TypeScript sources (export condition "@toolgate/source"), never a stale dist.
  ssr: { resolve: { conditions: ["@toolgate/source"] } },
  test: {
    // A test that asserts nothing fails: it would pass whatever the code did.
    expect: { requireAssertions: true },
    include: ["src/**/*.test.ts"],
    typecheck: { include: ["src/**/*.test-d.ts"], tsconfig: "./tsconfig.json" },
    globalSetup: ["./src/fixtures/global-setup.ts"],
    // fast-check runs on a pinned seed (printed on failure; TOOLGATE_FC_SEED replays or changes it).
    setupFiles: ["./src/fixtures/fast-check-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests spawn real child processes on a small shared machine: keep it modest.
    maxWorkers: 2,
  },
});
