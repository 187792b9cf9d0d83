// `npm run demo` builds the packages itself (scripts/demo.mjs): turbo with its telemetry off and
// its own output errors only, a spinner line on a terminal, nothing added when piped. A stand-in
// turbo first on PATH records what it was given and fails, so the demo stops there and nothing is
// built or run.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { root } from "./harness.js";

const demo = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts["demo"]!;

function standIn(): { env: Record<string, string>; seen: () => string[] } {
  const bin = mkdtempSync(join(tmpdir(), "toolgate-demo-turbo-"));
  const seen = join(bin, "seen");
  writeFileSync(
    join(bin, "turbo"),
    `#!/bin/sh\necho "telemetry=$TURBO_TELEMETRY_DISABLED $*" >> "${seen}"\nsleep 1\necho "turbo: a build error" >&2\nexit 7\n`,
  );
  chmodSync(join(bin, "turbo"), 0o755);
  return {
    env: { PATH: `${bin}:${process.env["PATH"] ?? ""}`, HOME: bin, TERM: "dumb" },
    seen: () => readFileSync(seen, "utf8").trim().split("\n"),
  };
}

describe("the demo's build step", () => {
  it("npm run demo is the demo script, which runs turbo with telemetry off and errors-only output, even when the caller's environment did not say so", () => {
    expect(demo).toBe("node scripts/demo.mjs");
    const turbo = standIn();
    const r = spawnSync("/bin/sh", ["-c", demo], { cwd: root, env: turbo.env, encoding: "utf8", timeout: 60_000 });
    expect(r.status, r.stderr).toBe(7);
    expect(turbo.seen()).toEqual(["telemetry=1 run build --output-logs=errors-only"]);
    // Piped: turbo's own error passes through, the demo says the build failed, and there is no progress.
    expect(r.stderr).toContain("turbo: a build error");
    expect(r.stderr).toContain("demo: the build failed (turbo exited 7)");
    expect(r.stdout + r.stderr).not.toContain("building the packages");
    expect(r.stdout + r.stderr).not.toContain("\r");
  });

  it("on a terminal (under script(1)) a spinner line says the build is running", () => {
    const turbo = standIn();
    const r = spawnSync("script", ["-qefc", `${JSON.stringify(process.execPath)} scripts/demo.mjs`, "/dev/null"], {
      cwd: root,
      env: turbo.env,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status).toBe(7);
    expect(r.stdout).toMatch(/\r[|/\\-] building the packages \(\d+ s\)/);
    expect(r.stdout).toContain("turbo: a build error");
    expect(turbo.seen()).toEqual(["telemetry=1 run build --output-logs=errors-only"]);
  });
});
