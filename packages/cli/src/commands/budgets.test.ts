import { beforeEach, describe, expect, it } from "vitest";
import { runIn, tempProject } from "../fixtures/temp-project.js";

let dir: string;
beforeEach(() => {
  dir = tempProject("toolgate-budgets-");
});

const toolgate = (...args: string[]) => runIn(dir, ...args);
const count = (text: string, ...flags: string[]) =>
  toolgate("call", "notes.count_words", "--input", JSON.stringify({ text }), "--profile", "metered", ...flags);

describe("toolgate budgets", () => {
  it("refuses a profile the composition does not have (exit 2, a bad argument, naming the profiles)", async () => {
    const r = await toolgate("budgets", "--profile", "nobody");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no profile named "nobody"');
    expect(r.stderr).toContain("metered");
  });

  it("with nothing counted, names the declared limits and the per-worker ones", async () => {
    const r = await toolgate("budgets");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("no calls counted against any limit");
    expect(r.stdout).toContain("nothing counted now: metered/counts (2 per principal every 1 min)");
    expect(r.stdout).toContain("calls in flight, bounded per worker (not journaled): metered/notes.*/concurrent (1)");
    expect(JSON.parse((await toolgate("budgets", "--json")).stdout)).toEqual([]);
  });
  it("counts real calls per principal from the project's journal, shared with every process on it, and says when the next fits", async () => {
    expect((await count("one two")).code).toBe(0);
    expect((await count("three")).code).toBe(0);
    const refused = await count("four");
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toContain("rate_limited");
    expect(refused.stdout + refused.stderr).toContain("hint: a profile's limit: toolgate budgets shows what it has used");
    expect((await count("for bo", "--principal", "bo")).code).toBe(0);

    const r = await toolgate("budgets");
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^profile\s+limit\s+per\s+tenant\s+principal\s+used\s+window\s+next call fits in\s+window empty in$/);
    expect(lines.find((l) => /\bbo\b/.test(l))).toMatch(/^metered\s+counts\s+principal\s+default\s+bo\s+1\/2\s+1 min\s+now\s+/);
    expect(lines.find((l) => /\bcli-test\b/.test(l))).toMatch(/^metered\s+counts\s+principal\s+default\s+cli-test\s+2\/2\s+1 min\s+\d+(\.\d)? s\s+/);
    expect(r.stdout).not.toContain("nothing counted now");

    const json = JSON.parse((await toolgate("budgets", "--profile", "metered", "--json")).stdout) as Record<string, unknown>[];
    expect(json).toHaveLength(2);
    expect(json[1]).toMatchObject({
      profile: "metered",
      limit: "counts",
      per: "principal",
      tenant: "default",
      principal: "cli-test",
      used: 2,
      max: 2,
      windowMs: 60_000,
    });
    expect(json[1]!["retryAfterMs"]).toBeGreaterThan(0);
    expect(json[1]!["retryAfterMs"]).toBeLessThanOrEqual(61_000);
    expect(json[0]).toMatchObject({ principal: "bo", used: 1, retryAfterMs: 0 });
    expect(JSON.parse((await toolgate("budgets", "--profile", "writer", "--json")).stdout)).toEqual([]);
  });
});
