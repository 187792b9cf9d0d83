import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const scripts = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;

describe("the repository root's npm scripts", () => {
  // A script that runs turbo as a command (not one that only names its cache directory, like clean).
  const turboScripts = Object.entries(scripts).filter(([, command]) => /(^|[\s;&|(])turbo\s/.test(command));

  it("some scripts run turbo (the check below has something to check)", () => {
    // The demo runs turbo from scripts/demo.mjs, telemetry off: tests/src/docs-commands/demo-build.test.ts checks that.
    expect(turboScripts.map(([name]) => name)).toEqual(expect.arrayContaining(["build", "test", "bench"]));
  });

  for (const [name, command] of turboScripts) {
    it(`${name}: turbo runs with its telemetry off, in a POSIX shell, even when the caller's environment did not say so`, () => {
      // Only a script whose first command is turbo is run here (after VAR=value words): the stand-in
      // below stops it there, so nothing else in it (a build, a removal) ever runs.
      expect(command).toMatch(/^(\w+=\S*\s+)*turbo\s/);
      // A stand-in turbo first on PATH records what it was given and fails, so the script stops there.
      const bin = mkdtempSync(join(tmpdir(), "toolgate-turbo-"));
      const seen = join(bin, "seen");
      writeFileSync(join(bin, "turbo"), `#!/bin/sh\necho "telemetry=$TURBO_TELEMETRY_DISABLED" >> "${seen}"\nexit 7\n`);
      chmodSync(join(bin, "turbo"), 0o755);
      const env = { PATH: `${bin}:${process.env["PATH"] ?? ""}`, HOME: bin };
      const r = spawnSync("/bin/sh", ["-c", command], { cwd: root, env, encoding: "utf8", timeout: 30_000 });
      expect(r.status, r.stderr).toBe(7);
      const lines = readFileSync(seen, "utf8").trim().split("\n");
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).toBe("telemetry=1");
    });
  }
});

describe("npx toolgate in the repository root", () => {
  it("resolves the repository's own CLI (a root dependency) and prints its help", () => {
    const r = spawnSync("npx", ["--no-install", "toolgate", "--help"], {
      cwd: root,
      encoding: "utf8",
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? tmpdir(), npm_config_update_notifier: "false" },
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Usage: toolgate/m);
    expect(r.stdout).toContain("Exit codes");
  });
});
