import { spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeEach, describe, expect, it } from "vitest";
import { tempProject } from "./fixtures/temp-project.js";

// The built binary, run as a program (set TOOLGATE_CLI_BIN to run these against another build).
const bin = process.env["TOOLGATE_CLI_BIN"] ?? fileURLToPath(new URL("../dist/bin.js", import.meta.url));

let dir: string;
beforeEach(() => {
  dir = tempProject("toolgate-edges-");
});

function toolgate(...args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: dir, encoding: "utf8", env: { PATH: process.env["PATH"] ?? "" }, timeout: 30_000, input: "" });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe("a composition file that does not parse", () => {
  const cases: [string, string, number][] = [
    ["broken.mjs", "export default {\n  profiles: [],\n  compose: () => ({ families: [] }),\n", 4],
    ["broken.js", "export default {\n  profiles: [],\n  compose: ;\n};\n", 3],
    ["broken.ts", "export default {\n  profiles: [] as string[],\n  compose: (: number) => 1,\n};\n", 3],
    ["broken.json", '{\n  "families": [],\n  "profiles": [,]\n}\n', 3],
    ["cut.json", '{\n  "families": [],\n  "profiles": [', 3],
  ];
  for (const [name, text, line] of cases) {
    it(`${name}: names the file and line, exit 3, no stack`, () => {
      writeFileSync(join(dir, name), text);
      const r = toolgate("--config", name, "inventory");
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain(`${name}:${line}`);
      expect(r.stderr).toMatch(/\(config_invalid\)/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    });
  }

  it("a JSON syntax error does not echo the file's text (it may hold a database URL)", () => {
    writeFileSync(join(dir, "secret.json"), '{ "families": [], "profiles": [], "journal": { "postgres": "postgres://u:hunter2@h/db" }, }');
    const r = toolgate("--config", "secret.json", "inventory");
    expect(r.code).toBe(3);
    expect(r.stderr).not.toContain("hunter2");
  });
});

describe("a composition file whose imports do not resolve", () => {
  const cases: [string, string, string, string][] = [
    [
      "missing.mjs",
      'import x from "no-such-package-here";\nexport default { profiles: [], compose: () => ({ families: [x] }) };\n',
      "no-such-package-here",
      "npm install no-such-package-here",
    ],
    ["relative.mjs", 'import x from "./nowhere.mjs";\nexport default { profiles: [], compose: () => ({ families: [x] }) };\n', "nowhere.mjs", "check the path"],
    [
      "unexported.mjs",
      'import { nothingLikeThis } from "node:path";\nexport default { profiles: [], compose: () => ({ families: [nothingLikeThis] }) };\n',
      "no export named nothingLikeThis",
      "check the names",
    ],
  ];
  for (const [name, text, says, hint] of cases) {
    it(`${name}: exit 3, says what cannot be found and what to do (not a syntax hint)`, () => {
      writeFileSync(join(dir, name), text);
      const r = toolgate("--config", name, "inventory");
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain(says);
      expect(r.stderr).toContain(hint);
      expect(r.stderr).not.toContain("fix the syntax");
    });
  }
});

describe("an unknown --profile", () => {
  const commands: string[][] = [
    ["inventory", "--profile", "nobody"],
    ["budgets", "--profile", "nobody"],
    ["call", "notes.count_words", "--input", "{}", "--profile", "nobody"],
    ["serve-mcp", "--profile", "nobody"],
    ["mcp-clients", "add", "c1", "--profile", "nobody"],
  ];
  it("serve-mcp --client that is not registered: exit 2 (a bad argument), not a configuration error", () => {
    const r = toolgate("serve-mcp", "--client", "nobody");
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('no active MCP client named "nobody"');
    expect(r.stderr).not.toContain("fix the composition file");
  });
  for (const args of commands) {
    it(`${args[0]}: exit 2 (a bad argument), naming the profiles there are`, () => {
      const r = toolgate(...args);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('no profile named "nobody"');
      expect(r.stderr).toContain("metered");
    });
  }
});

describe("option values that are not numbers", () => {
  const commands: string[][] = [
    ["audit", "tail", "-n", "abc"],
    ["audit", "tail", "-n", "-1"],
    ["audit", "tail", "-n", "1.5"],
    ["audit", "tail", "-n", "3x"],
    ["audit", "tail", "--lines", ""],
    ["serve-mcp", "--http", "abc"],
    ["serve-mcp", "--http", "70000"],
    ["console", "--port", "x1"],
    ["operators", "add", "ann", "--role", "viewer", "--port", "abc"],
    ["approvals", "approve", "r1", "--ttl", "soon"],
    ["outbox", "recover", "--older-than", "-5m"],
    ["outbox", "list", "--state", "bogus"],
    ["outbox", "list", "--state", "pending,done"],
    ["approvals", "list", "--status", "bogus"],
    ["journal", "prune", "--before", "someday"],
  ];
  for (const args of commands) {
    it(`${args.join(" ")}: refused, exit 2`, () => {
      const r = toolgate(...args);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    });
  }
  it("outbox list --state takes its states and all", () => {
    expect(toolgate("outbox", "list", "--state", "pending,failed").code).toBe(0);
    expect(toolgate("outbox", "list", "--state", "all").code).toBe(0);
  });
  it("audit tail -n 0 and -n 5 are fine", () => {
    expect(toolgate("audit", "tail", "-n", "5").code).toBe(0);
    expect(toolgate("audit", "tail", "-n", "0").code).toBe(0);
  });
});

describe("a reader that stopped (toolgate … | head -1)", () => {
  for (const args of [["inventory"], ["--help"], ["inventory", "--json"], ["audit", "tail", "--json"]]) {
    it(`${args.join(" ")}: ends quietly, exit 0`, async () => {
      const child = spawn(process.execPath, [bin, ...args], { cwd: dir, env: { PATH: process.env["PATH"] ?? "" }, stdio: ["ignore", "pipe", "pipe"] });
      // The read end is closed before the CLI writes a byte: every write it makes meets EPIPE.
      child.stdout.destroy();
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
      expect(stderr).not.toMatch(/EPIPE|\n\s+at /);
      expect(code).toBe(0);
    });
  }
});

describe("both pipes closed (toolgate … 2>&1 | head -1): the exit code is still the command's own", () => {
  const cases: [string[], number][] = [
    [["inventory"], 0],
    [["inventory", "--profile", "nobody"], 2],
    [["no-such-command"], 2],
    [["--config", "nope.json", "inventory"], 3],
  ];
  for (const [args, expected] of cases) {
    it(`${args.join(" ")}: exit ${expected}`, async () => {
      const child = spawn(process.execPath, [bin, ...args], { cwd: dir, env: { PATH: process.env["PATH"] ?? "" }, stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.destroy();
      child.stderr.destroy();
      const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.on("close", (c, s) => resolve([c, s])));
      expect(signal).toBeNull();
      expect(code).toBe(expected);
    });
  }
});

describe("--help on every command", () => {
  const commands: string[][] = [
    [],
    ["docs"],
    ["inventory"],
    ["budgets"],
    ["call"],
    ["approvals"],
    ["approvals", "list"],
    ["approvals", "approve"],
    ["audit", "tail"],
    ["audit", "verify"],
    ["outbox", "recover"],
    ["journal", "prune"],
    ["connections", "add"],
    ["tool"],
    ["tool", "init"],
    ["tool", "test"],
    ["serve-mcp"],
    ["mcp-clients", "add"],
    ["operators", "add"],
    ["kill-switch"],
    ["console"],
  ];
  for (const args of commands) {
    for (const flag of ["--help", "-h"]) {
      it(`toolgate ${[...args, flag].join(" ")}: usage, exit 0, nothing started`, () => {
        const r = toolgate(...args, flag);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toMatch(/^Usage: toolgate/m);
        expect(r.stdout + r.stderr).not.toMatch(/FAIL|ENOENT|no ToolRegister/);
      });
    }
  }
  it("tool test: a --help after -- belongs to the tool's command, not to toolgate", () => {
    const r = toolgate("tool", "test", "--", process.execPath, "-e", "process.exit(0)", "--help");
    expect(r.stdout).not.toMatch(/^Usage: toolgate/m);
    expect(r.stdout).toMatch(/FAIL handshake/);
  });
});

describe("a composition that starts a process and then fails", () => {
  // The composition leaves a child running (its pipes keep the event loop alive) and then fails; the
  // command must still end, with the composition's error, instead of waiting on the child forever.
  const starts = 'import { spawn } from "node:child_process";\nconst child = spawn("sleep", ["60"], { stdio: ["ignore", "pipe", "pipe"] });\n';
  it("compose() throws after the child started: the command ends with its error", () => {
    writeFileSync(
      join(dir, "leaky.mjs"),
      `${starts}export default { profiles: [], compose: async () => { throw new Error("the families could not be built"); } };\n`,
    );
    const started = Date.now();
    const r = toolgate("--config", "leaky.mjs", "inventory");
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.code).not.toBe(-1); // -1: killed by the 30 s timeout, still running
    expect(r.stderr).toContain("the families could not be built");
    expect(Date.now() - started).toBeLessThan(25_000);
  });

  it("the families it returned cannot be registered: its close() runs and the command ends", () => {
    const family = '{ name: "dup", tools: [] }';
    writeFileSync(
      join(dir, "dup.mjs"),
      `${starts}import { writeFileSync } from "node:fs";\nexport default { profiles: [], compose: async () => ({ families: [${family}, ${family}], close: () => { writeFileSync("closed.txt", "yes"); child.kill(); } }) };\n`,
    );
    const r = toolgate("--config", "dup.mjs", "inventory");
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.code).not.toBe(-1);
    expect(readFileSync(join(dir, "closed.txt"), "utf8")).toBe("yes");
  });
});
