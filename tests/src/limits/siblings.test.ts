// The ways around a send budget an agent could try, through the real gmail family and the Google
// emulator on a SQLite journal file: another key for the same mail, and the other send tool (a
// draft). A limit bounds exactly the tools it names; naming both send tools (or `gmail.*`) counts
// both on one record.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineProfile, type CallOptions, type InvokeResult } from "@toolgate/core";
import { grantAsOwner } from "@toolgate/core/testing";
import { startGoogleEmulator, type GoogleEmulator } from "@toolgate/emulators";
import { openSqliteJournal, type SqliteJournal } from "@toolgate/store-sqlite";
import { GMAIL_PERMISSIONS, SEND_CONSENT } from "@toolgate/tools-gmail";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AGENT, DAY_MS, MAIL_SCOPES, mailGate, mailer, OWNER, sendInput } from "./fixtures/mail-gate.js";

const DRAFTS = Array.from({ length: 4 }, (_, i) => ({ draftId: `r${i}`, to: "ana@example.test", subject: `draft ${i}`, body: `Draft ${i}.` }));
const base = { allow: [...GMAIL_PERMISSIONS], maxRisk: "high", consents: [SEND_CONSENT], egress: ["personal"] } as const;

let emulator: GoogleEmulator;
let journals: SqliteJournal[];
let path: string;
beforeEach(async () => {
  emulator = await startGoogleEmulator({ gmail: { address: OWNER, drafts: DRAFTS } });
  path = join(mkdtempSync(join(tmpdir(), "toolgate-limit-siblings-")), "journal.db");
  journals = [];
});
afterEach(async () => {
  for (const j of journals) await j.close();
  await emulator.close();
});

/** A gate on its own handle of the one journal file. */
async function gateOnFile() {
  const journal = await openSqliteJournal(path, { auditKey: "siblings-key" });
  journals.push(journal);
  return mailGate(journal, { rootUrl: emulator.url, tokenUrl: emulator.tokenUrl, ...emulator.client, code: emulator.authorize({ scopes: MAIL_SCOPES }).code });
}
type MailGate = Awaited<ReturnType<typeof gateOnFile>>;

/** Ask, grant as the owner, send with the grant; a call refused when asked comes back as it is. */
async function approved(gate: MailGate, id: string, input: unknown, call: CallOptions): Promise<InvokeResult> {
  const asked = await gate.invoke(id, input, call);
  if (asked.status !== "approval_required") return asked;
  return gate.invoke(id, input, { ...call, approval: await grantAsOwner(gate, asked.requestId) });
}

describe("a send budget and the ways around it", () => {
  it("a fresh idempotency key is a new call: once the budget is spent it is refused, while a retry under a spent key replays", async () => {
    const gate = await gateOnFile();
    for (let n = 0; n < 20; n++)
      expect(await approved(gate, "gmail.send_message", sendInput("keyed", n), { ...AGENT, idempotencyKey: `k${n}` })).toMatchObject({ status: "ok" });
    const fresh = await gate.invoke("gmail.send_message", sendInput("keyed", 0), { ...AGENT, idempotencyKey: "k-new" });
    expect(fresh).toMatchObject({ status: "denied", code: "rate_limited" });
    expect(await gate.invoke("gmail.send_message", sendInput("keyed", 0), { ...AGENT, idempotencyKey: "k0" })).toMatchObject({ status: "ok", replayed: true });
    expect(emulator.gmail.sent).toHaveLength(20);
  });

  it("a limit bounds only the tools it names: with send_message's budget spent, send_draft still sends", async () => {
    const gate = await gateOnFile();
    for (let n = 0; n < 20; n++) expect(await approved(gate, "gmail.send_message", sendInput("spent", n), AGENT)).toMatchObject({ status: "ok" });
    expect(await gate.invoke("gmail.send_message", sendInput("spent", 20), AGENT)).toMatchObject({ status: "denied", code: "rate_limited" });
    expect(mailer.limits.map((l) => l.tools)).toEqual([["gmail.send_message"]]);
    expect(await approved(gate, "gmail.send_draft", { draftId: "r0" }, AGENT)).toMatchObject({ status: "ok" });
    expect(emulator.gmail.sent).toHaveLength(21);
  });

  for (const tools of [["gmail.send_message", "gmail.send_draft"], ["gmail.*"]]) {
    it(`a limit naming ${tools.join(" and ")} counts both sends on one record: the third is refused, whichever tool`, async () => {
      const gate = await gateOnFile();
      const both = defineProfile({ ...base, name: "both-sends", limits: [{ tools, per: "principal", max: 2, windowMs: DAY_MS }] });
      const call = { ...AGENT, profile: both };
      expect(await approved(gate, "gmail.send_message", sendInput("both", 0), call)).toMatchObject({ status: "ok" });
      expect(await approved(gate, "gmail.send_draft", { draftId: "r1" }, call)).toMatchObject({ status: "ok" });
      expect(await gate.invoke("gmail.send_draft", { draftId: "r2" }, call)).toMatchObject({ status: "denied", code: "rate_limited" });
      expect(await gate.invoke("gmail.send_message", sendInput("both", 1), call)).toMatchObject({ status: "denied", code: "rate_limited" });
      expect(emulator.gmail.sent).toHaveLength(2);
      const charged = (await journals[0]!.readAudit()).filter((e) => e.type === "limit.charged");
      expect(charged.map((e) => [e.toolId, e.data["count"]])).toEqual([
        ["gmail.send_message", 1],
        ["gmail.send_draft", 2],
      ]);
      expect(new Set(charged.map((e) => e.subject)).size).toBe(1);
    });
  }
});
