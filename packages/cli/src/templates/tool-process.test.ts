import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { toolInit } from "../commands/tool.js";
import type { Io } from "../output.js";
import { pythonTemplate, scaffoldVersions, typescriptTemplate } from "./tool-process.js";

const packageJson = (dir: string) =>
  JSON.parse(readFileSync(new URL(`../../../${dir}/package.json`, import.meta.url), "utf8")) as { name: string; version: string };
const cli = packageJson("cli");
const processPackage = packageJson("process");

let scratch: string | undefined;
afterEach(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
});

/** Run `tool init` in a fresh directory and return its lines. */
async function init(dir: string, lang: string): Promise<{ cwd: string; lines: string[] }> {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), "toolgate-init-")));
  const lines: string[] = [];
  const io: Io = { out: (t) => lines.push(t), err: (t) => lines.push(t), interactive: false };
  const cwd = process.cwd();
  process.chdir(scratch);
  try {
    await toolInit(dir, { lang }, io);
  } finally {
    process.chdir(cwd);
  }
  return { cwd: scratch, lines };
}

const nextLine = (lines: string[]) => lines.find((l) => l.startsWith("next: "))?.slice("next: ".length);

describe("tool init: what a scaffold installs and what it says to run next", () => {
  it("pins the packages at this release (a scaffold must install from what wrote it, not a registry guess)", () => {
    const pkg = JSON.parse(typescriptTemplate("t")["package.json"]!) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    expect(pkg.devDependencies[cli.name]).toBe(cli.version);
    expect(pkg.dependencies[processPackage.name]).toBe(processPackage.version);
    expect(scaffoldVersions.cli).toBe(`${cli.name}@${cli.version}`);
    // No workspace-only or local spec: each must resolve for someone who has only the registry.
    for (const spec of [...Object.values(pkg.dependencies), ...Object.values(pkg.devDependencies)]) expect(spec).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("never tells a Python author to run a bare `toolgate` (not on PATH) or a bare `npx toolgate` (someone else's package)", async () => {
    const { lines } = await init("py", "python");
    const next = nextLine(lines)!;
    expect(next).toBe(`cd py && npx -p ${cli.name}@${cli.version} toolgate tool test -- python3 tool.py`);
    expect(next).not.toMatch(/&& toolgate |npx toolgate/);
    const readme = pythonTemplate("py")["README.md"]!;
    expect(readme).toContain(`npx -p ${cli.name}@${cli.version} toolgate tool test --input echo='{"text":"hi"}' -- python3 tool.py`);
    expect(readme).not.toMatch(/^\s+toolgate /m);
  });

  it("quotes a directory the shell would split or expand, so the next line runs verbatim", async () => {
    const dir = "my tool's $HOME";
    const { cwd, lines } = await init(dir, "ts");
    const next = nextLine(lines)!;
    expect(next.endsWith(" && npm install && npm test")).toBe(true);
    // The real shell runs the `cd` part, then says where it is.
    const cd = next.slice(0, -" && npm install && npm test".length);
    const r = spawnSync("/bin/sh", ["-c", `${cd} && pwd`], { cwd, encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(join(cwd, dir));
  });
});
