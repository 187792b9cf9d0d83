import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

/**
 * scripts/check-conventions.mjs on small workspaces: one that keeps every convention, and the same
 * workspace broken one way at a time. Each break must fail the check and name the file.
 */
const script = fileURLToPath(new URL("../../scripts/check-conventions.mjs", import.meta.url));
type Tree = Record<string, string>;

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
const entry = (source: string) => ({
  types: source.replace("./src/", "./dist/").replace(/\.ts$/, ".d.ts"),
  "@toolgate/source": source,
  import: source.replace("./src/", "./dist/").replace(/\.ts$/, ".js"),
});

/** A family on a connector on core, with an emulator for tests only: every convention kept. */
function wellFormed(): Tree {
  return {
    "package.json": json({ private: true, workspaces: ["packages/*"], devDependencies: { typescript: "5.9.3", vitest: "4.1.12" } }),
    "packages/core/package.json": json({
      name: "@toolgate/core",
      exports: { ".": entry("./src/index.ts"), "./testing": entry("./src/testing/index.ts") },
      peerDependencies: { vitest: "4.1.12" },
    }),
    "packages/core/src/index.ts": "export const defineFamily = (family: unknown) => family;\n",
    "packages/core/src/testing/index.ts":
      'import { describe } from "vitest";\nexport const describeToolFamily = (name: string) => describe(name, () => undefined);\n',
    "packages/emulators/package.json": json({ name: "@toolgate/emulators", exports: { ".": entry("./src/index.ts") } }),
    "packages/emulators/src/index.ts": "export const startEmulator = () => ({ url: 'http://127.0.0.1:1' });\n",
    "packages/connector-acme/package.json": json({
      name: "@toolgate/connector-acme",
      exports: { ".": entry("./src/index.ts"), "./testing": entry("./src/testing/index.ts") },
      dependencies: { "@toolgate/core": "0.1.0" },
      peerDependencies: { "@toolgate/emulators": "0.1.0" },
      devDependencies: { "@toolgate/emulators": "0.1.0" },
    }),
    "packages/connector-acme/src/index.ts": 'import { defineFamily } from "@toolgate/core";\nexport const connect = () => defineFamily({});\n',
    "packages/connector-acme/src/testing/index.ts": 'import { startEmulator } from "@toolgate/emulators";\nexport const harness = () => startEmulator();\n',
    "packages/tools-acme/package.json": json({
      name: "@toolgate/tools-acme",
      exports: { ".": entry("./src/index.ts") },
      dependencies: { "@toolgate/connector-acme": "0.1.0", "@toolgate/core": "0.1.0" },
      devDependencies: { "@toolgate/emulators": "0.1.0", "@toolgate/tools-other": "0.1.0", zod: "4.6.7" },
    }),
    "packages/tools-acme/src/index.ts": 'export { createAcmeTools } from "./acme-tools.js";\n',
    "packages/tools-acme/src/acme-tools.ts":
      'import { defineFamily } from "@toolgate/core";\nimport { pingTool } from "./tools/ping.js";\nexport const createAcmeTools = () => defineFamily({ tools: [pingTool()] });\n',
    "packages/tools-acme/src/permissions.ts": 'export const ACME_PERMISSIONS = ["acme:read"] as const;\n',
    "packages/tools-acme/src/options.ts": "export interface AcmeToolsOptions { readonly limit?: number }\n",
    "packages/tools-acme/src/client.ts": 'import { connect } from "@toolgate/connector-acme";\nexport const acmeClient = () => connect();\n',
    "packages/tools-acme/src/tools/ping.ts":
      'import { acmeClient } from "../client.js";\nexport const pingTool = () => ({ id: "acme.ping", run: acmeClient });\n',
    "packages/tools-acme/src/acme-tools.conformance.test.ts": 'import { describeToolFamily } from "@toolgate/core/testing";\ndescribeToolFamily("acme");\n',
    "packages/tools-acme/src/acme-tools.test.ts":
      'import { harness } from "@toolgate/connector-acme/testing";\nimport { startEmulator } from "@toolgate/emulators";\nimport { z } from "zod";\nimport { it } from "vitest";\nit("pings", () => void [harness, startEmulator, z]);\n',
  };
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function check(tree: Tree): { status: number | null; output: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "toolgate-conventions-"));
  dirs.push(dir);
  for (const [file, text] of Object.entries(tree)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  const run = spawnSync(process.execPath, [script, "--root", dir], { encoding: "utf8" });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** The check fails, naming each of `lines`. */
function expectRefused(tree: Tree, ...lines: string[]): void {
  const { status, output } = check(tree);
  expect(status).toBe(1);
  for (const line of lines) expect(output).toContain(line);
}

function without(tree: Tree, file: string): Tree {
  const { [file]: _, ...rest } = tree;
  return rest;
}

describe("check-conventions refuses", () => {
  it("a family's production code importing an emulator it declares only for tests", () => {
    const tree = wellFormed();
    tree["packages/tools-acme/src/client.ts"] = 'import { startEmulator } from "@toolgate/emulators";\nexport const acmeClient = () => startEmulator();\n';
    expectRefused(
      tree,
      'packages/tools-acme/src/client.ts: production code imports "@toolgate/emulators"',
      "does not declare @toolgate/emulators in dependencies or peerDependencies",
    );
  });

  it("a family importing another family, in a test as in production", () => {
    const tree = wellFormed();
    tree["packages/tools-acme/src/acme-tools.test.ts"] =
      'import { other } from "@toolgate/tools-other";\nimport { it } from "vitest";\nit("x", () => void other);\n';
    expectRefused(tree, "packages/tools-acme/src/acme-tools.test.ts: a family imports another family (@toolgate/tools-other)");
  });

  it("a production file importing what only devDependencies declare", () => {
    const tree = wellFormed();
    tree["packages/tools-acme/src/options.ts"] = 'import { z } from "zod";\nexport const acmeOptions = z.object({});\n';
    expectRefused(tree, 'packages/tools-acme/src/options.ts: imports "zod", but @toolgate/tools-acme does not declare zod in dependencies or peerDependencies');
  });

  it("a connector importing a family", () => {
    const tree = wellFormed();
    tree["packages/connector-acme/package.json"] = tree["packages/connector-acme/package.json"]!.replace(
      '"@toolgate/core": "0.1.0"',
      '"@toolgate/core": "0.1.0", "@toolgate/tools-acme": "0.1.0"',
    );
    tree["packages/connector-acme/src/index.ts"] = 'import { createAcmeTools } from "@toolgate/tools-acme";\nexport const connect = () => createAcmeTools();\n';
    expectRefused(tree, "packages/connector-acme/src/index.ts: a connector imports @toolgate/tools-acme");
  });

  it("a production entry that reaches the test entry", () => {
    const tree = wellFormed();
    tree["packages/connector-acme/src/index.ts"] += 'export { harness } from "./testing/index.js";\n';
    expectRefused(tree, 'packages/connector-acme/src/testing/index.ts: reached from the production entry "." of @toolgate/connector-acme, but it is test code');
  });

  it("a family without one of its support files, or with its conformance suite under another name", () => {
    expectRefused(without(wellFormed(), "packages/tools-acme/src/client.ts"), "packages/tools-acme/src/client.ts: missing");

    const tree = without(wellFormed(), "packages/tools-acme/src/acme-tools.conformance.test.ts");
    tree["packages/tools-acme/src/conformance.test.ts"] = wellFormed()["packages/tools-acme/src/acme-tools.conformance.test.ts"]!;
    expectRefused(
      tree,
      "packages/tools-acme/src/acme-tools.conformance.test.ts: missing: the family's conformance suite",
      "packages/tools-acme/src/conformance.test.ts: runs describeToolFamily; the family's suite runs once, in src/acme-tools.conformance.test.ts",
    );
  });
});

describe("check-conventions accepts", () => {
  it("a source file over 400 lines, or a file of the gate over 250 (tests may be longer)", () => {
    const tree = wellFormed();
    tree["packages/tools-acme/src/options.ts"] = "export const x = 1;\n".repeat(401);
    tree["packages/core/src/gate/steps/run.ts"] = "export const y = 1;\n".repeat(251);
    tree["packages/tools-acme/src/tools/ping.test.ts"] = "// a long test file is allowed\n".repeat(500);
    expectRefused(
      tree,
      "packages/tools-acme/src/options.ts: is 401 lines; split it along a seam (at most 400)",
      "packages/core/src/gate/steps/run.ts: is 251 lines; split it along a seam (at most 250)",
    );
    expect(check(tree).output).not.toContain("ping.test.ts");
  });

  it("a workspace that keeps every convention", () => {
    expect(check(wellFormed())).toEqual({ status: 0, output: expect.stringContaining("check-conventions: every package's imports match") });
  });
});
