/**
 * Outside review of the CLI's approval surface (issue 15): what the owner reads in the terminal
 * before deciding must be what the call will do.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { runIn, tempProject } from "./fixtures/temp-project.js";

let dir: string;
beforeEach(() => {
  dir = tempProject("toolgate-review-");
});
const toolgate = (...args: string[]) => runIn(dir, ...args);

/** Characters a terminal acts on instead of showing: C0/C1 controls (ESC, CSI, CR, backspace…) and bidi overrides. */
const ACTS_ON_TERMINAL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/;

describe("review: the preview the owner reads in the terminal", () => {
  it("approvals show, approvals list and the call's own output cannot be rewritten by escape sequences in the input", async () => {
    // An agent chooses the note's name and text; the preview repeats them. ESC[2K + CR erases the
    // line so far; ESC[8m hides what follows; U+202E reverses it; CSI (0x9B) starts a sequence too.
    const name = 'quarterly\u001b[2K\rSave note "todo"';
    const text = "harmless\u001b[8m rm -rf / \u001b[0m\u202Eeulav\u009b2J";
    const call = await toolgate("call", "notes.save_note", "--profile", "writer", "--input", JSON.stringify({ name, text }));
    expect(call.code, call.stderr).toBe(4);
    expect(call.stdout + call.stderr).not.toMatch(ACTS_ON_TERMINAL);
    const id = /apr_[0-9a-f-]+/.exec(call.stdout + call.stderr)![0];
    const show = await toolgate("approvals", "show", id);
    expect(show.code).toBe(0);
    expect(show.stdout).not.toMatch(ACTS_ON_TERMINAL);
    // Still shown, visibly: the owner sees that something was hidden there.
    expect(show.stdout).toContain("rm -rf /");
    const list = await toolgate("approvals", "list");
    expect(list.stdout).not.toMatch(ACTS_ON_TERMINAL);
  });
});
