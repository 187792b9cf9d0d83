// `toolgate approvals approve ID --input FILE`: the real binary against a SQLite journal in a temp
// project. The owner's edit is checked (schema, editable fields), previewed again and approved only
// with the preview hash the owner saw; the caller's retry of its original call runs the edited one.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const config = fileURLToPath(new URL("./fixtures/edits.config.mjs", import.meta.url));
const nodeModules = fileURLToPath(new URL("../../../node_modules", import.meta.url));

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "toolgate-edit-"));
  copyFileSync(config, join(dir, "toolgate.config.mjs"));
  symlinkSync(nodeModules, join(dir, "node_modules"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The real binary in the temp project; stdin is a pipe (not a terminal), so nothing can be confirmed on it. */
function toolgate(args: readonly string[], options: { input?: string; env?: Record<string, string> } = {}): Ran {
  const r = spawnSync(process.execPath, [bin, ...args], {
    cwd: dir,
    encoding: "utf8",
    input: options.input ?? "",
    env: { PATH: process.env["PATH"] ?? "", ...options.env },
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

const ORIGINAL = { name: "todo", text: "buy milk and a bomb" };
const EDITED = { name: "todo", text: "buy milk" };

/** The call as the agent made it: approval required, its request id. */
function ask(profile = "writer", input: unknown = ORIGINAL): { id: string; call: () => Ran } {
  const call = () => toolgate(["call", "notes.save_note", "--input", JSON.stringify(input), "--profile", profile]);
  const asked = call();
  expect(asked.code, asked.stderr).toBe(4);
  return { id: /request (apr_[0-9a-f-]+)/.exec(asked.stdout)![1]!, call };
}

function file(name: string, value: unknown): string {
  writeFileSync(join(dir, name), typeof value === "string" ? value : JSON.stringify(value));
  return name;
}

const statusOf = (id: string) => (JSON.parse(toolgate(["approvals", "show", id, "--json"]).stdout) as { status: string }).status;
const ranLines = () => (existsSync(join(dir, "ran.log")) ? readFileSync(join(dir, "ran.log"), "utf8").trim().split("\n") : []);
const hashIn = (text: string) => /^preview hash: ([0-9a-f]{64})$/m.exec(text)?.[1];

describe("approvals approve --input: refusals (nothing granted)", () => {
  it("without --preview-hash off a terminal: prints the changes, the recomputed preview and its hash, exits 2, grants nothing", () => {
    const { id } = ask();
    const r = toolgate(["approvals", "approve", id, "--input", file("edit.json", EDITED)]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('/text: "buy milk and a bomb" → "buy milk"');
    expect(r.stdout).toMatch(/^ {2}\| buy milk$/m);
    expect(hashIn(r.stdout)).toMatch(/^[0-9a-f]{64}$/);
    expect(r.stderr).toContain(`--preview-hash ${hashIn(r.stdout)}`);
    expect(statusOf(id)).toBe("pending");
    expect(toolgate(["audit", "export"]).stdout).not.toContain("approval.granted");
  });

  it("a preview hash that is not the recomputed one is refused (exit 1); a malformed one is a usage error", () => {
    const { id } = ask();
    const edit = file("edit.json", EDITED);
    const wrong = toolgate(["approvals", "approve", id, "--input", edit, "--preview-hash", "a".repeat(64)]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("approval_invalid");
    expect(toolgate(["approvals", "approve", id, "--input", edit, "--preview-hash", "abc"]).code).toBe(2);
    expect(statusOf(id)).toBe("pending");
  });

  it("bad JSON, a missing file, a file over 1 MiB and stdin without a hash are usage errors; nothing granted", () => {
    const { id } = ask();
    const approve = (f: string, input?: string) => toolgate(["approvals", "approve", id, "--input", f], input === undefined ? {} : { input });
    const bad = approve(file("bad.json", "{not json"));
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining("not valid JSON")]);
    expect(approve("nope.json").code).toBe(2);
    const huge = approve(file("huge.json", JSON.stringify({ name: "todo", text: "x".repeat(1024 * 1024) })));
    expect([huge.code, huge.stderr]).toEqual([2, expect.stringContaining("larger than 1048576 bytes")]);
    const piped = approve("-", JSON.stringify(EDITED));
    expect(piped.code).toBe(2);
    expect(piped.stdout).toContain('/text: "buy milk and a bomb" → "buy milk"');
    expect(statusOf(id)).toBe("pending");
  });

  it("an edit of a field the tool does not let be edited is edit_refused; one outside the schema is invalid_input; a tool with edits false refuses any", () => {
    const { id } = ask();
    const renamed = toolgate(["approvals", "approve", id, "--input", file("name.json", { name: "other", text: "buy milk" })]);
    expect(renamed.code).toBe(1);
    expect(renamed.stderr).toContain("edit_refused");
    expect(renamed.stderr).toMatch(/hint: .*editable fields/);
    const extra = toolgate(["approvals", "approve", id, "--input", file("extra.json", { ...EDITED, cc: "x" })]);
    expect([extra.code, extra.stderr]).toEqual([1, expect.stringContaining("invalid_input")]);
    const long = toolgate(["approvals", "approve", id, "--input", file("long.json", { name: "todo", text: "y".repeat(201) })]);
    expect([long.code, long.stderr]).toEqual([1, expect.stringContaining("invalid_input")]);
    const erase = toolgate(["call", "notes.erase_note", "--input", '{"name":"todo"}', "--profile", "writer"]);
    const eraseId = /request (apr_[0-9a-f-]+)/.exec(erase.stdout)![1]!;
    const refused = toolgate(["approvals", "approve", eraseId, "--input", file("erase.json", { name: "other" })]);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining("edit_refused")]);
    expect([statusOf(id), statusOf(eraseId)]).toEqual(["pending", "pending"]);
    expect(ranLines()).toEqual([]);
  });
});

describe("approvals approve --input --preview-hash: the edited call runs once", () => {
  it("grants the edit; the caller's retry of the ORIGINAL call runs the edited input once, then replays; show and audit tell both inputs", () => {
    const { id, call } = ask();
    const edit = file("edit.json", EDITED);
    const hash = hashIn(toolgate(["approvals", "approve", id, "--input", edit]).stdout)!;
    const granted = toolgate(["approvals", "approve", id, "--input", edit, "--preview-hash", hash]);
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.stdout).toContain(`approved the edited call of ${id}`);
    expect(statusOf(id)).toBe("granted");

    const shown = toolgate(["approvals", "show", id]).stdout;
    expect(shown).toContain("editable /text");
    expect(shown).toContain('"buy milk and a bomb"');
    expect(shown).toMatch(/edited {3}version 1 by owner/);
    expect(shown).toContain('/text: "buy milk and a bomb" → "buy milk"');
    expect(shown).toContain(`→ ${hash}`);
    const json = JSON.parse(toolgate(["approvals", "show", id, "--json"]).stdout) as { input: unknown; edit: { input: unknown; version: number } };
    expect([json.input, json.edit.input, json.edit.version]).toEqual([ORIGINAL, EDITED, 1]);
    expect(toolgate(["audit", "tail"]).stdout).toMatch(new RegExp(`approval\\.edited .*requestId=${id} v1 by owner /text`));

    const ran = call();
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect(ran.stdout).toContain("/text");
    expect(ranLines()).toEqual([JSON.stringify({ id: "notes.save_note", input: EDITED })]);
    const again = call();
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("replayed");
    expect(ranLines()).toHaveLength(1);
    // The edited input sent as a call of its own is another call: it asks a human, the edited grant does not run it.
    expect(toolgate(["call", "notes.save_note", "--input", JSON.stringify(EDITED), "--profile", "writer"]).code).toBe(4);
    expect(ranLines()).toHaveLength(1);
  });

  it("terminal controls and bidi overrides in an edit are printed as visible markers (the check, show, audit)", () => {
    const { id } = ask();
    const hostile = { name: "todo", text: "milk\u001b[2J\u202eevil" };
    const checked = toolgate(["approvals", "approve", id, "--input", "-"], { input: JSON.stringify(hostile) });
    const hash = hashIn(checked.stdout)!;
    expect(toolgate(["approvals", "approve", id, "--input", "-", "--preview-hash", hash], { input: JSON.stringify(hostile) }).code).toBe(0);
    const shown = toolgate(["approvals", "show", id]).stdout;
    for (const out of [checked.stdout, shown]) {
      expect(out).toContain("milk⟨U+001B⟩[2J⟨U+202E⟩evil");
      expect(out).not.toMatch(/[\u001b\u202e]/);
    }
    expect(toolgate(["audit", "tail"]).stdout).not.toMatch(/[\u001b\u202e]/);
  });

  it("the edited input from stdin with the hash is granted", () => {
    const { id } = ask();
    const hash = hashIn(toolgate(["approvals", "approve", id, "--input", "-"], { input: JSON.stringify(EDITED) }).stdout)!;
    const r = toolgate(["approvals", "approve", id, "--input", "-", "--preview-hash", hash], { input: JSON.stringify(EDITED) });
    expect(r.code, r.stderr).toBe(0);
    expect(statusOf(id)).toBe("granted");
  });

  it("two approvers: the owner's edit counts once; approving the edited request again needs its preview hash, and a second person", () => {
    const { id } = ask("careful");
    const edit = file("edit.json", EDITED);
    const hash = hashIn(toolgate(["approvals", "approve", id, "--input", edit]).stdout)!;
    const first = toolgate(["approvals", "approve", id, "--input", edit, "--preview-hash", hash]);
    expect(first.code, first.stderr).toBe(4);
    expect(first.stdout).toContain("1 of 2");
    const noHash = toolgate(["approvals", "approve", id]);
    expect([noHash.code, noHash.stderr]).toEqual([2, expect.stringContaining("needs the preview hash you checked")]);
    const again = toolgate(["approvals", "approve", id, "--preview-hash", hash]);
    expect([again.code, again.stderr]).toEqual([1, expect.stringContaining("second, different approver")]);
    expect(statusOf(id)).toBe("pending");
    expect(toolgate(["approvals", "list"]).stdout).toMatch(new RegExp(`${id} +pending +1/2`));
  });

  it("a check made from an earlier version cannot replace an edit made since: --from-version names it, and an edited request needs it", () => {
    const { id } = ask("careful");
    const mine = file("mine.json", { name: "todo", text: "buy oat milk" });
    const check = toolgate(["approvals", "approve", id, "--input", mine]);
    expect(check.stderr).toContain("--from-version 0 --preview-hash");
    const myHash = hashIn(check.stdout)!;
    // Meanwhile another edit lands (version 1, one of two approvals).
    const other = file("other.json", EDITED);
    const otherHash = hashIn(toolgate(["approvals", "approve", id, "--input", other]).stdout)!;
    expect(toolgate(["approvals", "approve", id, "--input", other, "--preview-hash", otherHash]).code).toBe(4);
    const stale = toolgate(["approvals", "approve", id, "--input", mine, "--from-version", "0", "--preview-hash", myHash]);
    expect([stale.code, stale.stderr]).toEqual([1, expect.stringContaining("changed since you looked")]);
    const unnamed = toolgate(["approvals", "approve", id, "--input", mine, "--preview-hash", myHash]);
    expect([unnamed.code, unnamed.stderr]).toEqual([2, expect.stringContaining("say which version your check started from")]);
    expect(toolgate(["approvals", "approve", id, "--input", mine, "--from-version", "x1", "--preview-hash", myHash]).code).toBe(2);
    const shown = JSON.parse(toolgate(["approvals", "show", id, "--json"]).stdout) as { status: string; edit: { version: number; input: unknown } };
    expect([shown.status, shown.edit.version, shown.edit.input]).toEqual(["pending", 1, EDITED]);
  });
});

/** The CLI in this process (its sources, for the mutation check); `answer`: a person answering at a terminal. */
async function inProcess(answer: string | undefined, ...args: string[]): Promise<{ code: number; out: string; asked: string[] }> {
  const { run } = await import("./program.js");
  const out: string[] = [];
  const asked: string[] = [];
  const ask = (question: string) => (asked.push(question), Promise.resolve(answer));
  const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t), interactive: answer !== undefined };
  const code = await run(args, { io: answer === undefined ? io : { ...io, ask }, cwd: dir });
  return { code, out: out.join("\n"), asked };
}

describe("approvals approve --input, in this process", () => {
  it("on a terminal: asks after showing the recomputed preview; anything but yes approves nothing, yes grants that preview", async () => {
    const { id } = ask();
    const edit = join(dir, file("edit.json", EDITED));
    const no = await inProcess("n", "approvals", "approve", id, "--input", edit);
    expect([no.code, no.asked]).toEqual([1, ["approve the edited call? [y/N] "]]);
    expect(no.out).toContain(`nothing approved; ${id} is still pending`);
    expect(statusOf(id)).toBe("pending");
    const yes = await inProcess("y", "approvals", "approve", id, "--input", edit);
    expect(yes.code, yes.out).toBe(0);
    expect(yes.out).toMatch(/preview hash: [0-9a-f]{64}[\s\S]*approved the edited call of/);
    expect(statusOf(id)).toBe("granted");
  });

  it("off a terminal without --preview-hash: exit 2, nothing granted; an edited request needs the hash of its current version", async () => {
    const { id } = ask("careful");
    const edit = join(dir, file("edit.json", EDITED));
    const off = await inProcess(undefined, "approvals", "approve", id, "--input", edit);
    expect([off.code, off.out]).toEqual([2, expect.stringContaining("no terminal to confirm on")]);
    expect(statusOf(id)).toBe("pending");
    expect((await inProcess("y", "approvals", "approve", id, "--input", edit)).code).toBe(4);
    const bare = await inProcess(undefined, "approvals", "approve", id);
    expect([bare.code, bare.out]).toEqual([2, expect.stringContaining("needs the preview hash you checked")]);
  });

  it("a profile's approvalEdits naming a field the tool does not allow is refused at load (exit 3)", async () => {
    process.env["NOTES_APPROVAL_EDITS"] = JSON.stringify({ "notes.save_note": ["/name"] });
    try {
      const r = await inProcess(undefined, "inventory");
      expect([r.code, r.out]).toEqual([3, expect.stringContaining('does not let "/name" be edited')]);
    } finally {
      delete process.env["NOTES_APPROVAL_EDITS"];
    }
  });
});

describe("the config loader checks approvalEdits against the composed tools", () => {
  const load = (edits: unknown) => toolgate(["inventory"], { env: { NOTES_APPROVAL_EDITS: JSON.stringify(edits) } });

  it("an unknown tool or family, or a field the manifest does not allow, is profile_invalid at load (exit 3)", () => {
    for (const [edits, says] of [
      [{ "notes.save_nope": ["/text"] }, 'no tool "notes.save_nope"'],
      [{ "mail.*": false }, 'no family "mail"'],
      [{ "notes.save_note": ["/name"] }, 'does not let "/name" be edited'],
      [{ "notes.save_note": ["/text/inner"] }, "names no member"],
      [{ "notes.erase_note": ["/name"] }, "refuses edits"],
      [{ "notes.*": ["/nothing"] }, 'no tool of notes.* lets "/nothing" be edited'],
    ] as const) {
      const r = load(edits);
      expect(r.code, JSON.stringify(edits)).toBe(3);
      expect(r.stderr).toContain("profile_invalid");
      expect(r.stderr).toContain(says);
    }
  });

  it("entries that narrow what the tools allow load", () => {
    for (const edits of [{ "notes.save_note": ["/text"] }, { "notes.save_note": [""] }, { "notes.*": ["/text"] }, { "notes.*": false }]) {
      const r = load(edits);
      expect(r.code, `${JSON.stringify(edits)}: ${r.stderr}`).toBe(0);
    }
  });
});
