/**
 * The conformance run's verdict on one scenario (scripts/mcp-conformance.mjs `verdict`), held to
 * failing: conformance.test.ts reads only the verdicts, so a verdict that let a failed or warned
 * check, a crashed suite or a scenario with no checks through would keep that suite green.
 */
import { pathToFileURL, fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

type Check = { id: string; status: string; errorMessage?: string };
type Verdict = { ok: boolean; passed: number; failed: string[] };
const script = fileURLToPath(new URL("../../../scripts/mcp-conformance.mjs", import.meta.url));
const { verdict } = (await import(pathToFileURL(script).href)) as { verdict: (result: { code: number | null; checks: Check[] }) => Verdict };

const ok: Check = { id: "server-initialize", status: "SUCCESS" };

describe("the conformance run's verdict on a scenario", () => {
  it("passes a scenario whose suite exited 0 with every check a success (informational ones aside)", () => {
    expect(verdict({ code: 0, checks: [ok, { id: "note", status: "INFO" }] })).toEqual({ ok: true, passed: 1, failed: [] });
  });

  it("fails a failed check, and names it with its message", () => {
    const v = verdict({ code: 0, checks: [ok, { id: "tools-list", status: "FAILURE", errorMessage: "no tools" }] });
    expect(v).toEqual({ ok: false, passed: 1, failed: ["tools-list FAILURE: no tools"] });
  });

  it("fails a warned check", () => {
    expect(verdict({ code: 0, checks: [ok, { id: "ping", status: "WARNING" }] })).toMatchObject({ ok: false, failed: ["ping WARNING"] });
  });

  it("fails a scenario with no successful check (the suite wrote none, or only notes)", () => {
    expect(verdict({ code: 0, checks: [] })).toMatchObject({ ok: false, passed: 0 });
    expect(verdict({ code: 0, checks: [{ id: "note", status: "INFO" }] })).toMatchObject({ ok: false, passed: 0 });
  });

  it("fails a suite that exited non-zero or was killed, whatever checks it wrote", () => {
    expect(verdict({ code: 1, checks: [ok] })).toMatchObject({ ok: false });
    expect(verdict({ code: null, checks: [ok] })).toMatchObject({ ok: false });
  });
});
