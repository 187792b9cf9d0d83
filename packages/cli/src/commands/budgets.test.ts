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
  it("refuses a profile the composition does not have (exit 3, naming the profiles)", async () => {
    const r = await toolgate("budgets", "--profile", "nobody");
    expect(r.code).toBe(3);
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
});
