/** The kill switch: a tool or family disabled on one worker is refused on the next call of every worker sharing the journal. */
import { describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { base, workers } from "./fixtures/gates.js";

describe("the kill switch", () => {
  it("a killed tool is refused on a second worker sharing the journal, journaled, until enabled again", async () => {
    const [a, b] = workers(2);
    b!.store.notes.set("n", "hello");
    expect(await b!.gate.invoke("notes.read_note", { id: "n" }, base)).toMatchObject({ status: "ok" });
    const stop = await a!.gate.authority.switches.disable("tool:notes.read_note", "reads leak", a!.gate.authority.owner());
    expect(stop).toMatchObject({ target: "tool:notes.read_note", reason: "reads leak", by: "owner" });
    const refused = await b!.gate.invoke("notes.read_note", { id: "n" }, base);
    expect(refused).toMatchObject({ status: "denied", code: "tool_disabled", boundary: "pre_effect_refusal", details: { target: "tool:notes.read_note" } });
    expect(refused.status === "denied" && refused.receipt).toBeTruthy();
    const journaled = (await b!.journal.readAudit()).filter((e) => e.type === "call.refused");
    expect(journaled.at(-1)).toMatchObject({ toolId: "notes.read_note", data: { code: "tool_disabled" } });
    // Other tools of the family still run.
    expect(await b!.gate.invoke("notes.word_count", { text: "a b" }, base)).toMatchObject({ status: "ok" });
    expect(await b!.gate.authority.switches.list()).toEqual([stop]);
    await b!.gate.authority.switches.enable("tool:notes.read_note", b!.gate.authority.owner());
    expect(await a!.gate.authority.switches.list()).toEqual([]);
    expect(await b!.gate.invoke("notes.read_note", { id: "n" }, base)).toMatchObject({ status: "ok" });
  });

  it("a killed family stops every tool of it, before a human is asked and with a grant in hand", async () => {
    const [a, b] = workers(2);
    const first = await b!.gate.invoke("notes.add_note", { id: "n", text: "x" }, base);
    if (first.status !== "approval_required") throw new Error("expected approval");
    const decided = await b!.gate.approvals.grant(first.requestId, { by: b!.gate.authority.owner() });
    if (decided.status !== "granted") throw new Error("expected a grant");
    await a!.gate.authority.switches.disable("family:notes", "incident 7", a!.gate.authority.owner());
    for (const [id, input, call] of [
      ["notes.word_count", { text: "a" }, base],
      ["notes.add_note", { id: "n", text: "x" }, { ...base, approval: decided.grant }],
      ["notes.add_note", { id: "n", text: "x" }, base],
      ["notes.delete_note", { id: "m" }, base],
    ] as const) {
      expect(await b!.gate.invoke(id, input, call), id).toMatchObject({ status: "denied", code: "tool_disabled" });
    }
    expect(b!.store.writes).toBe(0);
    expect(await b!.gate.approvals.list({ status: ["pending"] })).toEqual([]);
    expect(await b!.gate.approvals.get(first.requestId)).toMatchObject({ status: "granted" });
  });

  it("only an admin switches, with a reason, on a real target", async () => {
    const [a] = workers(1);
    const { authority } = a!.gate;
    const owner = authority.owner();
    await authority.operators.add("alma", { role: "approver" }, owner);
    const alma = await authority.actingAs("alma");
    const refused = (p: Promise<unknown>, code: string) => expect(p).rejects.toSatisfy((e) => ToolError.is(e, code as never));
    await refused(authority.switches.disable("tool:notes.read_note", "x", alma), "approver_forbidden");
    await refused(authority.switches.disable("tool:notes.read_note", "x", { ...owner }), "approver_invalid");
    for (const target of ["notes.read_note", "tool:", "tool:Notes", "family:", "family:notes.x", "all", "tool:notes.read_note "]) {
      await refused(authority.switches.disable(target, "x", owner), "config_invalid");
    }
    await refused(authority.switches.disable("family:notes", " ", owner), "config_invalid");
    await refused(authority.switches.enable("family:notes", owner), "not_found");
    expect(await authority.switches.list()).toEqual([]);
    expect(await a!.gate.invoke("notes.word_count", { text: "a" }, base)).toMatchObject({ status: "ok" });
  });

  it("a worker whose switch reads were answered from memory refuses the next call once the row is edited behind the journal", async () => {
    const [a] = workers(1);
    const owner = a!.gate.authority.owner();
    await a!.gate.authority.switches.disable("tool:notes.word_count", "x", owner);
    await a!.gate.authority.switches.enable("tool:notes.word_count", owner);
    for (let i = 0; i < 3; i++) expect(await a!.gate.invoke("notes.word_count", { text: "a" }, base)).toMatchObject({ status: "ok" });
    const rows = a!.driver.tables.records;
    const row = rows.get("switch:tool:notes.word_count")!;
    rows.set("switch:tool:notes.word_count", { ...row, text: row.text.replace('"by":"owner"', '"by":"someone"') });
    expect(await a!.gate.invoke("notes.word_count", { text: "a" }, base)).toMatchObject({ status: "error", code: "journal_tampered" });
  });

  it("a switch row edited or deleted behind the journal's back refuses that tool's calls rather than letting one through", async () => {
    const [a, b] = workers(2);
    const owner = a!.gate.authority.owner();
    await a!.gate.authority.switches.disable("tool:notes.word_count", "x", owner);
    const rows = a!.driver.tables.records;
    const row = rows.get("switch:tool:notes.word_count")!;
    // Re-enabled by an edit of the stored row: not trusted.
    rows.set("switch:tool:notes.word_count", { ...row, text: row.text.replace('"disabled"', '"enabled"') });
    expect(row.text).toContain('"disabled"');
    expect(await b!.gate.invoke("notes.word_count", { text: "a" }, base)).toMatchObject({ status: "error", code: "journal_tampered" });
    // Another tool's switches are read on their own, and still hold.
    b!.store.notes.set("n", "x");
    expect(await b!.gate.invoke("notes.read_note", { id: "n" }, base)).toMatchObject({ status: "ok" });
    // Deleted outright: not trusted either.
    rows.delete("switch:tool:notes.word_count");
    expect(await b!.gate.invoke("notes.word_count", { text: "a" }, base)).toMatchObject({ status: "error", code: "journal_tampered" });
  });
});
