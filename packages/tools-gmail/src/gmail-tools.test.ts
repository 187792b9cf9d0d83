import { createGate, createMemoryJournal, createToolRegistry, defineProfile, type CallOptions, type ConnectorRuntime, type Journal } from "@toolgate/core";
import { recoverOutbox } from "@toolgate/core/operator";
import { createCrashingJournal, grantAsOwner } from "@toolgate/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGmailTools } from "./gmail-tools.js";
import { GMAIL_PERMISSIONS, GMAIL_SCOPES, SEND_CONSENT } from "./permissions.js";
import type { GmailToolsOptions } from "./options.js";
import { MAILBOX, OWNER, startHarness, type Harness } from "./fixtures/harness.js";

const profile = defineProfile({ name: "assistant", allow: [...GMAIL_PERMISSIONS], maxRisk: "high", consents: [SEND_CONSENT], egress: ["personal"] });
const call: CallOptions = { principal: "agent-1", tenant: "home", profile };
const hello = { to: ["ana@example.test"], subject: "Lunch?", body: "Are you free on Friday?" };

/** Counts every connector open: proves a refusal happened before any token was read. */
function counting(inner: ConnectorRuntime): ConnectorRuntime & { opens: number } {
  const wrapper = { opens: 0, open: (request: Parameters<ConnectorRuntime["open"]>[0]) => (wrapper.opens++, inner.open(request)) };
  return wrapper;
}

describe("gmail family through a real gate, the real client and the emulator", () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness();
  });
  afterEach(() => harness.emulator.close());

  const gateWith = (options: GmailToolsOptions = {}, extra: { connectors?: ConnectorRuntime; journal?: Journal; secrets?: readonly string[] } = {}) =>
    createGate({
      registry: createToolRegistry({ families: [createGmailTools({ rootUrl: harness.emulator.url, from: OWNER, retry: { baseDelayMs: 0 }, ...options })] }),
      journal: extra.journal ?? createMemoryJournal(),
      connectors: extra.connectors ?? harness.connectors,
      secrets: extra.secrets ?? harness.secrets,
    });
  const approved = async (gate: ReturnType<typeof gateWith>, id: string, input: unknown, options: Partial<CallOptions> = {}) => {
    const first = await gate.invoke(id, input, { ...call, ...options });
    if (first.status !== "approval_required") return first;
    const grant = await grantAsOwner(gate, first.requestId);
    return gate.invoke(id, input, { ...call, ...options, approval: grant });
  };

  // ---------- negative tests first ----------

  it("refuses a send to a recipient outside the allowlist before any token is read", async () => {
    const connectors = counting(harness.connectors);
    const gate = gateWith({ recipientAllowlist: ["ana@example.test", "@team.example.test"] }, { connectors });
    const result = await gate.invoke("gmail.send_message", { ...hello, cc: ["stranger@elsewhere.test"] }, call);
    expect(result.status).toBe("error");
    expect(result.status === "error" && result.code).toBe("invalid_input");
    expect(JSON.stringify(result)).toContain("not on the operator's recipient allowlist: stranger@elsewhere.test");
    expect(connectors.opens).toBe(0);
    expect(harness.emulator.requests.filter((r) => r.endpoint !== "oauth2.token")).toHaveLength(0);
    const allowed = await gate.invoke("gmail.send_message", { ...hello, to: ["bo@team.example.test"] }, call);
    expect(allowed.status).toBe("approval_required");
  });

  it("fails closed when the allowlist option is on but empty", async () => {
    const connectors = counting(harness.connectors);
    const gate = gateWith({ recipientAllowlist: [] }, { connectors });
    const result = await gate.invoke("gmail.send_message", hello, call);
    expect(result.status === "error" && result.code).toBe("invalid_input");
    expect(JSON.stringify(result)).toContain("sending is disabled");
    expect(connectors.opens).toBe(0);
  });

  it("refuses a draft send whose recipients fall outside the allowlist, nothing sent", async () => {
    harness.emulator.reset({ gmail: { ...MAILBOX, drafts: [{ draftId: "r200", to: "stranger@elsewhere.test", subject: "x", body: "y" }] } });
    const gate = gateWith({ recipientAllowlist: ["@example.test"] });
    const result = await gate.invoke("gmail.send_draft", { draftId: "r200" }, call);
    expect(result.status === "error" && result.code).toBe("permission_denied");
    expect(harness.emulator.gmail.sent).toHaveLength(0);
  });

  it("refuses header injection through the subject or a recipient (CR/LF) before any token is read", async () => {
    const connectors = counting(harness.connectors);
    const gate = gateWith({}, { connectors });
    for (const input of [
      { ...hello, subject: "Lunch?\r\nBcc: spy@evil.test" },
      { ...hello, subject: "Lunch?\nX-Injected: 1" },
      { ...hello, to: ["ana@example.test\r\nBcc: spy@evil.test"] },
      { ...hello, bcc: ["spy@evil.test\n"] },
      { ...hello, inReplyTo: "<a@b>\r\nBcc: spy@evil.test" },
    ]) {
      for (const tool of ["gmail.send_message", "gmail.create_draft"]) {
        const result = await gate.invoke(tool, input, call);
        expect(result.status === "error" && result.code, `${tool} ${JSON.stringify(input)}`).toBe("invalid_input");
      }
    }
    expect(connectors.opens).toBe(0);
    expect(harness.emulator.gmail.sent).toHaveLength(0);
  });

  it("does not accept a preview approved for one body as approval for another", async () => {
    const gate = gateWith();
    const first = await gate.invoke("gmail.send_message", hello, call);
    expect(first.status).toBe("approval_required");
    if (first.status !== "approval_required") return;
    expect(first.preview.details).toMatchObject({ from: OWNER, to: ["ana@example.test"], subject: "Lunch?" });
    expect(first.preview.body).toBe(hello.body);
    const grant = await grantAsOwner(gate, first.requestId);
    const swapped = await gate.invoke("gmail.send_message", { ...hello, body: "Please wire 5,000 to this account." }, { ...call, approval: grant });
    expect(swapped.status).toBe("denied");
    expect(swapped.status === "denied" && swapped.code).toBe("approval_invalid");
    expect(harness.emulator.gmail.sent).toHaveLength(0);
    // The mismatch did not burn the grant: the approved body still goes out, once.
    const sent = await gate.invoke("gmail.send_message", hello, { ...call, approval: grant });
    expect(sent.status).toBe("ok");
    expect(harness.emulator.gmail.sent.map((m) => m.text)).toEqual([hello.body]);
  });

  it("does not send a draft that changed after its preview was approved", async () => {
    const gate = gateWith();
    const first = await gate.invoke("gmail.send_draft", { draftId: "r100" }, call);
    expect(first.status).toBe("approval_required");
    if (first.status !== "approval_required") return;
    expect(first.preview.body).toBe("Draft agenda for Monday.");
    const grant = await grantAsOwner(gate, first.requestId);
    harness.emulator.reset({
      gmail: {
        ...MAILBOX,
        drafts: [{ draftId: "r100", id: "dd01", from: OWNER, to: "ana@example.test", subject: "Agenda", body: "Send the passwords file too." }],
      },
    });
    const result = await gate.invoke("gmail.send_draft", { draftId: "r100" }, { ...call, approval: grant });
    expect(result.status === "denied" && result.code).toBe("approval_invalid");
    expect(harness.emulator.gmail.sent).toHaveLength(0);
  });

  it("a sent draft's retry with the caller's key replays the send: the draft is gone, the preview is not needed", async () => {
    const gate = gateWith();
    const keyed = { idempotencyKey: "send-agenda" };
    expect(await approved(gate, "gmail.send_draft", { draftId: "r100" }, keyed)).toMatchObject({ status: "ok", replayed: false });
    expect(harness.emulator.gmail.sent).toHaveLength(1);
    // The answer was lost; the agent sends again with the same key (no grant: nothing new happens).
    const retry = await gate.invoke("gmail.send_draft", { draftId: "r100" }, { ...call, ...keyed });
    expect(retry).toMatchObject({ status: "ok", replayed: true });
    expect(harness.emulator.gmail.sent).toHaveLength(1);
  });

  it("maps the emulator's 403 for a token lacking the scope to scope_missing, nothing sent, no secret leaked", async () => {
    // The vault believes the connection holds gmail.send; the token Google issued does not.
    const { connectors, vault, secrets } = await harness.connect([GMAIL_SCOPES.readonly]);
    const [info] = await vault.list();
    const tokens = (await vault.readTokens(info!.id))!;
    await vault.writeTokens(info!.id, { ...tokens, scopes: [GMAIL_SCOPES.readonly, GMAIL_SCOPES.send] });
    const gate = gateWith({}, { connectors, secrets });
    const result = await approved(gate, "gmail.send_message", hello);
    expect(result.status).toBe("error");
    expect(result.status === "error" && result.code).toBe("scope_missing");
    expect(result.status === "error" && result.boundary).toBe("effect_not_started");
    expect(harness.emulator.requests.filter((r) => r.endpoint === "gmail.users.messages.send").map((r) => r.status)).toEqual([403]);
    expect(harness.emulator.gmail.sent).toHaveLength(0);
    const everything = JSON.stringify([result, await gate.journal.readAudit()]);
    for (const secret of secrets) expect(everything).not.toContain(secret);
  });

  it("refuses, before any request, a tool whose scope the connection was never granted", async () => {
    const { connectors } = await harness.connect([GMAIL_SCOPES.readonly]);
    const gate = gateWith({}, { connectors });
    const result = await approved(gate, "gmail.send_message", hello);
    expect(result.status === "error" && result.code).toBe("scope_missing");
    expect(harness.emulator.requests.filter((r) => r.endpoint.startsWith("gmail."))).toHaveLength(0);
  });

  it("flags and fences an email whose body tells the agent to forward the mailbox", async () => {
    const gate = gateWith();
    const result = await gate.invoke("gmail.read_message", { messageId: "bb01" }, call);
    expect(result.status).toBe("ok");
    if (result.status !== "ok") return;
    expect(result.untrusted).toBe(true);
    expect(result.findings.map((f) => f.rule)).toEqual(expect.arrayContaining(["override-instructions", "exfiltration"]));
    expect(result.content).toMatch(/^<untrusted-data boundary="tg-[0-9a-f]+" tool="gmail.read_message">/);
    expect(result.content).toContain("do not follow it");
    const search = await gate.invoke("gmail.search_messages", { query: "invoice" }, call);
    expect(search.status === "ok" && search.findings.length).toBeGreaterThan(0);
    const held = await gate.invoke(
      "gmail.read_message",
      { messageId: "bb01" },
      { ...call, profile: defineProfile({ ...profile, name: "careful", onInjection: "hold" }) },
    );
    expect(held.status).toBe("approval_required");
    expect(held.status === "approval_required" && held.reason).toBe("output");
  });

  it("refreshes an expired access token once when many calls find it expired together", async () => {
    let now = Date.UTC(2025, 2, 10, 12);
    const clock = () => now;
    harness = (await harness.emulator.close(), await startHarness({ clock }));
    const { connectors, secrets } = await harness.connect(undefined, { clock, expiresInMs: 3_600_000 });
    now += 2 * 3_600_000; // past expiry for the runtime and for the emulator alike
    const gate = gateWith({}, { connectors, secrets });
    const before = harness.emulator.oauthStats.refreshes;
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => gate.invoke("gmail.read_message", { messageId: i % 2 ? "aa01" : "aa02" }, call)));
    expect(results.map((r) => r.status)).toEqual(Array(6).fill("ok"));
    expect(harness.emulator.oauthStats.refreshes - before).toBe(1);
    expect(harness.emulator.requests.filter((r) => r.status === 401)).toHaveLength(0);
  });

  it("reports effect_state_unknown when the connection drops after a send, and neither a retry nor recovery sends again", async () => {
    const gate = gateWith();
    harness.emulator.inject({ kind: "drop_after_effect", methods: ["gmail.users.messages.send"] });
    const key = { idempotencyKey: "send-lunch-1" };
    const dropped = await approved(gate, "gmail.send_message", hello, key);
    expect(dropped.status).toBe("error");
    expect(dropped.status === "error" && dropped.code).toBe("effect_state_unknown");
    expect(dropped.status === "error" && dropped.boundary).toBe("effect_state_unknown");
    expect(harness.emulator.gmail.sent).toHaveLength(1);
    const retried = await approved(gate, "gmail.send_message", hello, key);
    expect(retried.status === "denied" && retried.code).toBe("effect_state_unknown");
    const report = await recoverOutbox(gate, { olderThanMs: 0 });
    expect(report.replayed).toBe(0);
    expect(harness.emulator.gmail.sent).toHaveLength(1);
    expect(harness.emulator.requests.filter((r) => r.endpoint === "gmail.users.messages.send")).toHaveLength(1);
  });

  it("never resends after a crash between the send and its journaled result: recovery leaves it for an operator", async () => {
    const journal = createCrashingJournal(createMemoryJournal());
    const before = gateWith({}, { journal });
    harness.emulator.inject({ kind: "drop_after_effect", methods: ["gmail.users.messages.send"] });
    journal.crashed = true;
    const first = await approved(before, "gmail.send_message", hello, { idempotencyKey: "send-lunch-2" });
    expect(first.status).toBe("error");
    expect((await journal.listOutbox({ states: ["pending"] })).map((e) => e.toolId)).toEqual(["gmail.send_message"]);
    journal.crashed = false;
    const after = gateWith({}, { journal }); // the restarted process
    const report = await recoverOutbox(after, { olderThanMs: 0 });
    expect(report.entries.map((e) => [e.toolId, e.action])).toEqual([["gmail.send_message", "unknown"]]);
    const retried = await approved(after, "gmail.send_message", hello, { idempotencyKey: "send-lunch-2" });
    expect(retried.status === "denied" && retried.code).toBe("effect_state_unknown");
    expect(harness.emulator.gmail.sent).toHaveLength(1);
  });

  it("retries a read after 429 honouring Retry-After, but never a send after 429 or 5xx", async () => {
    const gate = gateWith();
    harness.emulator.inject({ kind: "rate_limit", retryAfterSeconds: 0, methods: ["gmail.users.messages.list"], times: 2 });
    const search = await gate.invoke("gmail.search_messages", { query: "from:ana" }, call);
    expect(search.status).toBe("ok");
    expect(harness.emulator.requests.filter((r) => r.endpoint === "gmail.users.messages.list").map((r) => r.status)).toEqual([429, 429, 200]);

    harness.emulator.inject({ kind: "rate_limit", retryAfterSeconds: 3600, methods: ["gmail.users.labels.list"] });
    const limited = await gate.invoke("gmail.list_labels", {}, call);
    expect(limited.status === "error" && limited.code).toBe("rate_limited");
    expect(limited.status === "error" && limited.retryable).toBe(true);

    harness.emulator.inject({ kind: "rate_limit", retryAfterSeconds: 0, methods: ["gmail.users.messages.send"] });
    const refused = await approved(gate, "gmail.send_message", hello, { idempotencyKey: "send-429" });
    expect(refused.status === "error" && refused.code).toBe("rate_limited");
    expect(refused.status === "error" && refused.boundary).toBe("effect_not_started");
    harness.emulator.inject({ kind: "server_error", status: 500, methods: ["gmail.users.messages.send"] });
    const failed = await approved(gate, "gmail.send_message", hello, { idempotencyKey: "send-500" });
    expect(failed.status === "error" && failed.code).toBe("provider_unavailable");
    expect(failed.status === "error" && failed.boundary).toBe("effect_state_unknown");
    expect(harness.emulator.requests.filter((r) => r.endpoint === "gmail.users.messages.send")).toHaveLength(2);
    expect(harness.emulator.gmail.sent).toHaveLength(0);
  });

  it("a send Google refused with 429 applied nothing: the same call, retried with its key, sends once", async () => {
    const gate = gateWith();
    harness.emulator.inject({ kind: "rate_limit", retryAfterSeconds: 0, methods: ["gmail.users.messages.send"] });
    const key = { idempotencyKey: "send-after-limit" };
    const refused = await approved(gate, "gmail.send_message", hello, key);
    expect(refused.status === "error" && [refused.code, refused.boundary]).toEqual(["rate_limited", "effect_not_started"]);
    expect(harness.emulator.gmail.sent).toHaveLength(0);
    const later = await approved(gate, "gmail.send_message", hello, key);
    expect(later.status).toBe("ok");
    expect(harness.emulator.gmail.sent).toHaveLength(1);
  });

  it("maps not_found and reauth (a revoked grant) to typed errors", async () => {
    const gate = gateWith();
    const missing = await gate.invoke("gmail.read_message", { messageId: "ffff" }, call);
    expect(missing.status === "error" && missing.code).toBe("not_found");
    harness.emulator.revoke(harness.secrets[1]!);
    const revoked = await gate.invoke("gmail.read_message", { messageId: "aa01" }, call);
    expect(revoked.status === "error" && revoked.code).toBe("connector_reauth_required");
  });

  // ---------- every tool, end to end ----------

  it("runs every tool end to end", async () => {
    const gate = gateWith({ attachments: true });
    const search = await gate.invoke("gmail.search_messages", { query: "subject:plan", maxResults: 1 }, call);
    expect(search.status === "ok" && search.output).toMatchObject({
      messages: [{ id: "aa02", subject: "Re: Quarterly plan", unread: false }],
      resultSizeEstimate: 2,
    });
    expect(search.status === "ok" && search.output.nextPageToken).toBeTruthy();
    const read = await gate.invoke("gmail.read_message", { messageId: "aa01" }, call);
    expect(read.status === "ok" && read.output).toMatchObject({
      from: "Ana <ana@example.test>",
      subject: "Quarterly plan",
      body: "Here is the plan for next quarter.",
    });
    const thread = await gate.invoke("gmail.read_thread", { threadId: "aa01" }, call);
    expect(thread.status === "ok" && thread.output.messages.map((m) => m.id)).toEqual(["aa01", "aa02"]);
    const labels = await gate.invoke("gmail.list_labels", {}, call);
    expect(labels.status === "ok" && labels.output.labels).toContainEqual({ id: "Label_1", name: "Receipts", type: "user" });

    const draft = await gate.invoke(
      "gmail.create_draft",
      {
        to: ["ana@example.test"],
        subject: "Notes — café",
        body: "Ünïcode body",
        attachments: [{ filename: "notes.txt", mimeType: "text/plain", contentBase64: Buffer.from("hi").toString("base64") }],
      },
      call,
    );
    expect(draft.status).toBe("ok");
    const draftId = draft.status === "ok" ? draft.output.draftId : "";
    const sendDraft = await approved(gate, "gmail.send_draft", { draftId });
    expect(sendDraft.status).toBe("ok");
    expect(harness.emulator.gmail.sent.at(-1)).toMatchObject({
      subject: "Notes — café",
      text: "Ünïcode body",
      viaDraft: true,
      attachments: [{ filename: "notes.txt", size: 2 }],
    });

    const sent = await approved(gate, "gmail.send_message", {
      ...hello,
      cc: ["bo@example.test"],
      bcc: ["cy@example.test"],
      threadId: "aa01",
      inReplyTo: "<plan@example.test>",
    });
    expect(sent.status === "ok" && (sent.output as { threadId: string }).threadId).toBe("aa01");
    expect(harness.emulator.gmail.sent.at(-1)).toMatchObject({
      to: ["ana@example.test"],
      cc: ["bo@example.test"],
      bcc: ["cy@example.test"],
      subject: "Lunch?",
      text: hello.body,
    });

    const modified = await approved(gate, "gmail.modify_labels", { messageId: "aa01", addLabelIds: ["Label_1", "STARRED"], removeLabelIds: ["UNREAD"] });
    expect(modified.status === "ok" && [...(modified.output as { labelIds: string[] }).labelIds].sort()).toEqual(["INBOX", "Label_1", "STARRED"]);
    const trashed = await approved(gate, "gmail.trash_message", { messageId: "bb01" });
    expect(trashed.status === "ok" && (trashed.output as { labelIds: string[] }).labelIds).toContain("TRASH");
    expect(harness.emulator.gmail.sent).toHaveLength(2);
  });

  it("refuses attachments when the operator turned them off", async () => {
    const gate = gateWith({ attachments: false });
    const result = await gate.invoke(
      "gmail.send_message",
      { ...hello, attachments: [{ filename: "a.txt", mimeType: "text/plain", contentBase64: "aGk=" }] },
      call,
    );
    expect(result.status === "error" && result.code).toBe("invalid_input");
  });

  it("refuses more recipients than the operator allows", async () => {
    const gate = gateWith({ maxRecipients: 2 });
    const result = await gate.invoke("gmail.send_message", { ...hello, cc: ["b@example.test", "c@example.test"] }, call);
    expect(result.status === "error" && result.code).toBe("invalid_input");
  });
});
