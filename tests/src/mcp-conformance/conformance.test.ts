/**
 * The official MCP conformance suite against `toolgate serve-mcp --http`, through
 * scripts/mcp-conformance.mjs (which installs the suite and its Node into a gitignored cache, starts
 * the server with its bearer check on, and runs each scenario): one test per scenario that applies
 * to a tools-only server, so each is counted.
 *
 * Not run, because they need what a tools-only gate does not serve (the script's NOT_APPLICABLE
 * says the same, scenario by scenario):
 * - completion-complete: completions are for prompt and resource-template arguments; there are none.
 * - tools-call-simple-text, -image, -audio, -embedded-resource, -mixed-content, -with-logging,
 *   -error, -with-progress, server-sse-polling, json-schema-2020-12: each calls or lists a fixed
 *   tool name with no dot (test_simple_text, …), and a gate tool id is always family.tool; several
 *   also expect image, audio or resource blocks (served results are text) or logs from inside a tool.
 * - tools-call-sampling: the tool asks the client's model (sampling/createMessage); the gate never samples.
 * - tools-call-elicitation, elicitation-sep1034-defaults, elicitation-sep1330-enums: the tool asks
 *   the user for free form input; the gate elicits only an operator-enabled approval.
 * - resources-* and prompts-*: the server serves tools only.
 * Run anyway, tools-call-simple-text and tools-call-error report PASS without meaning it: they check
 * only that the answer to their unknown tool is a text (error) result, which the refusal is.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const script = join(root, "scripts", "mcp-conformance.mjs");
const APPLICABLE = ["server-initialize", "ping", "logging-set-level", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"];

interface Report {
  readonly suite: { name: string; version: string };
  readonly node: string;
  readonly results: readonly { scenario: string; ok: boolean; passed: number; failed: readonly string[]; output?: string }[];
  readonly notApplicable: Readonly<Record<string, string>>;
  readonly suiteServerScenarios: readonly string[];
}

const scratch = mkdtempSync(join(tmpdir(), "toolgate-mcp-conformance-test-"));
let run: { status: number | null; stdout: string; stderr: string };
let report: Report | undefined;

function runScript(...args: string[]) {
  const r = spawnSync(process.execPath, [script, ...args], { cwd: root, encoding: "utf8", timeout: 900_000 });
  return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

// The first run installs the suite and its Node (seconds from the registry); each scenario then
// starts a client process against one server compiled from its sources.
beforeAll(() => {
  run = runScript("--json", join(scratch, "report.json"));
  try {
    report = JSON.parse(readFileSync(join(scratch, "report.json"), "utf8")) as Report;
  } catch {
    report = undefined;
  }
}, 900_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("the official MCP conformance suite against toolgate serve-mcp --http", () => {
  it("ran the pinned suite with the server's authentication on, and its token never printed", () => {
    expect(report, `${run.stdout}\n${run.stderr}`).toBeDefined();
    expect(report?.suite).toEqual({ name: "@modelcontextprotocol/conformance", version: "0.1.16" });
    expect(report?.node).toMatch(/^22\.\d+\.\d+$/);
    expect(run.stdout).toMatch(/refuses a request without a token \(401\)/);
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/tgc_/);
    expect(report?.results.map((r) => r.scenario)).toEqual(APPLICABLE);
  });

  it("every server scenario the suite lists is run here or named as not applicable, with why", () => {
    const listed = report?.suiteServerScenarios ?? [];
    expect(listed.length).toBeGreaterThanOrEqual(APPLICABLE.length);
    expect([...APPLICABLE, ...Object.keys(report?.notApplicable ?? {})].sort()).toEqual([...listed].sort());
    for (const why of Object.values(report?.notApplicable ?? {})) expect(why.length).toBeGreaterThan(10);
  });

  for (const scenario of APPLICABLE) {
    it(`${scenario} passes`, () => {
      const result = report?.results.find((r) => r.scenario === scenario);
      expect(result, `${run.stdout}\n${run.stderr}`).toBeDefined();
      expect(result?.failed, result?.output).toEqual([]);
      expect(result?.passed).toBeGreaterThan(0);
      expect(result?.ok).toBe(true);
      expect(run.stdout).toContain(`PASS ${scenario} (`);
    });
  }

  it("refuses a scenario that does not apply, or that the suite does not have, as a bad argument (exit 2) before installing or starting anything", () => {
    const notApplicable = runScript("--scenario", "tools-call-sampling");
    expect(notApplicable.status).toBe(2);
    expect(notApplicable.stderr).toContain("tools-call-sampling does not apply");
    const unknown = runScript("--scenario", "no-such-scenario");
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("unknown scenario");
    expect(runScript("--json").status).toBe(2);
    expect(runScript("--bogus").status).toBe(2);
  });
});
