/** Review of issue 16's `toolgate budgets`: a principal's characters a terminal acts on are shown, never acted on. */
import { beforeEach, describe, expect, it } from "vitest";
import { runIn, tempProject } from "../fixtures/temp-project.js";

let dir: string;
beforeEach(() => {
  dir = tempProject("toolgate-budgets-review-");
});
const toolgate = (...args: string[]) => runIn(dir, ...args);

describe("review: toolgate budgets prints the principals a worker counted", () => {
  it("an escape sequence or a zero-width character in a principal is a visible marker in the table, as toolgate call shows text", async () => {
    // A worker counts its callers under the names they signed up with: one erases the line, one looks like another.
    for (const principal of ["mallory\u001b[2K\rbob", "b\u200bo"]) {
      const r = await toolgate("call", "notes.count_words", "--input", JSON.stringify({ text: "one" }), "--profile", "metered", "--principal", principal);
      expect(r.code, r.stderr).toBe(0);
    }
    const r = await toolgate("budgets");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/[\u001b\r\u200b]/);
    expect(r.stdout).toContain("mallory⟨U+001B⟩[2K⟨U+000D⟩bob");
    expect(r.stdout).toContain("b⟨U+200B⟩o");
    // --json keeps the exact values (JSON escapes what a terminal would act on).
    const json = JSON.parse((await toolgate("budgets", "--json")).stdout) as { principal: string }[];
    expect(json.map((u) => u.principal).sort()).toEqual(["b\u200bo", "mallory\u001b[2K\rbob"]);
  });
});
