/**
 * The desk's side of approve-with-edits: `previewEdit` and `grant({ edit, expect })`. Refusals first,
 * one per class, each asserting that nothing was written (the journal's head did not move) and the
 * request is as it was; then what an accepted edit writes.
 */
import { createHash } from "node:crypto";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Approver } from "../authority/types.js";
import type { ConnectorRuntime } from "../context.js";
import { ToolError } from "../errors.js";
import { REDACTED } from "../redactor.js";
import { defineFamily } from "../family.js";
import { createJournal } from "../journal/create-journal.js";
import { memoryDriver } from "../journal/memory.js";
import type { ApprovalRequest } from "../journal/types.js";
import { defineTool } from "../manifest.js";
import { defineProfile, type Profile } from "../profile.js";
import { createToolRegistry } from "../registry.js";
import { metricTotal } from "../telemetry/fixtures/traced-gate.js";
import { askedRequest } from "../testing/approver.js";
import { createGate, type AnyGate } from "./gate.js";

const SECRET = "s3cret-value-123";
const isolation = { network: "none", filesystem: "none", secrets: "none", subprocess: "none" } as const;
const write = { effect: "write", idempotent: true, retryable: true, reversible: false, approval: "always", untrustedOutput: false } as const;

interface FixtureOptions {
  profile?: Profile;
  maxInputBytes?: number;
  clock?: () => number;
  meterProvider?: MeterProvider;
  connectors?: ConnectorRuntime;
}

function fixture(options: FixtureOptions = {}) {
  const state = { suffix: "", previews: 0, sent: [] as unknown[] };
  const sendMail = defineTool({
    ...write,
    id: "desk.send_mail",
    title: "Send mail",
    description: "Sends a mail.",
    input: z.strictObject({
      account: z.string(),
      to: z.array(z.string().regex(/@ok\.test$/)),
      cc: z.array(z.string().regex(/@ok\.test$/)).optional(),
      subject: z.string(),
      body: z.string(),
      meta: z.object({ tag: z.string(), lang: z.string() }).optional(),
    }),
    output: z.object({}),
    actionType: "email-send",
    requiredAllowlist: ["desk:send"],
    risk: "high",
    edits: { fields: ["/to", "/cc", "/subject", "/body", "/meta"] },
    preview: (i) => {
      state.previews++;
      return { summary: `Send "${i.subject}" to ${i.to.length} recipient(s)${state.suffix}`, details: { to: i.to }, body: i.body };
    },
    target: (i) => i.to.join(","),
    runtimeIsolation: isolation,
    handler: (i) => {
      state.sent.push(i);
      return {};
    },
  });
  const purge = defineTool({
    ...write,
    id: "desk.purge",
    title: "Purge",
    description: "Purges a box. Cannot be undone.",
    input: z.strictObject({ box: z.string() }),
    output: z.object({}),
    actionType: "email-modify",
    requiredAllowlist: ["desk:send"],
    risk: "medium",
    edits: false,
    preview: (i) => ({ summary: `Purge ${i.box}` }),
    runtimeIsolation: isolation,
    handler: () => ({}),
  });
  const tag = defineTool({
    ...write,
    id: "desk.tag",
    title: "Tag",
    description: "Tags things.",
    input: z.strictObject({ tags: z.record(z.string(), z.string()) }),
    output: z.object({}),
    actionType: "email-modify",
    requiredAllowlist: ["desk:send"],
    risk: "medium",
    preview: (i) => ({ summary: `Tag ${Object.keys(i.tags).length}` }),
    runtimeIsolation: isolation,
    handler: () => ({}),
  });
  const remote = defineTool({
    ...write,
    id: "desk.remote_note",
    title: "Remote note",
    description: "Posts a note through a connection.",
    input: z.strictObject({ text: z.string() }),
    output: z.object({}),
    actionType: "notes-write",
    requiredAllowlist: ["desk:send"],
    risk: "medium",
    connector: { provider: "mail", scopes: ["mail.send"] },
    preview: async (i, ctx) => {
      const client = await ctx.connector!.client<{ token: string }>();
      return {
        summary: `Post ${i.text}`,
        details: { as: ctx.effect.principal, for: ctx.effect.tenant, invocation: ctx.effect.invocationId },
        body: `with ${client.token}`,
      };
    },
    runtimeIsolation: { ...isolation, network: "provider", secrets: "connector" },
    handler: () => ({}),
  });
  const tools = options.connectors ? [sendMail, purge, tag, remote] : [sendMail, purge, tag];
  const family = defineFamily({ name: "desk", description: "Desk test tools.", tools, permissions: ["desk:send"] });
  const journal = createJournal(memoryDriver(), { auditKey: "desk-edit-test" });
  const gate = createGate({
    registry: createToolRegistry({ families: [family] }),
    journal,
    secrets: [SECRET],
    ...(options.maxInputBytes ? { maxInputBytes: options.maxInputBytes } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.meterProvider ? { telemetry: { meterProvider: options.meterProvider } } : {}),
    ...(options.connectors ? { connectors: options.connectors } : {}),
  });
  const profile = options.profile ?? defineProfile({ name: "p", allow: ["desk:send"], maxRisk: "critical" });
  return { gate, journal, state, call: { principal: "agent-1", tenant: "t1", profile } };
}

const MAIL = { account: "me@ok.test", to: ["ann@ok.test", "typo@ok.test"], subject: "Hi", body: "Hello" };

function ask(gate: AnyGate, call: { principal: string; tenant: string; profile: Profile }, id = "desk.send_mail", input: unknown = MAIL) {
  return askedRequest(gate, id, input, call);
}

async function refused(promise: Promise<unknown>, code: string): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ToolError.is(error), String(error)).toBe(true);
  expect((error as ToolError).code).toBe(code);
  return error as ToolError;
}

/** The refusal wrote nothing: the journal's head and the request are as before. */
async function unchanged(gate: AnyGate, before: { seq: number; mac: string }, request: ApprovalRequest) {
  expect(await gate.journal.head()).toEqual(before);
  expect(await gate.approvals.get(request.id)).toEqual(request);
}

/** Both desk doors refuse the edit with `code`, writing nothing; `grant` is given the preview hash shown. */
async function bothRefuse(gate: AnyGate, id: string, by: Approver, input: unknown, expectSeen: unknown, code: string): Promise<ToolError[]> {
  const request = (await gate.approvals.get(id))!;
  const head = await gate.journal.head();
  const errors = [
    await refused(gate.approvals.previewEdit(id, { by, input, expect: expectSeen as never }), code),
    await refused(gate.approvals.grant(id, { by, expect: expectSeen as never, edit: { input, previewHash: request.previewHash } }), code),
  ];
  await unchanged(gate, head, request);
  return errors;
}

/** A request written straight to the journal, as an older gate, a held output or a mid-call ask would have. */
function rawRequest(journal: AnyGate["journal"], id: string, fields: Partial<Parameters<AnyGate["journal"]["requestApproval"]>[0]>) {
  return journal.requestApproval({
    toolId: "desk.send_mail",
    inputHash: createHash("sha256").update(id).digest("hex"),
    principal: "agent-1",
    tenant: "t1",
    previewHash: "p".repeat(64),
    preview: { summary: "s" },
    target: undefined,
    invocationId: "inv",
    createdAt: new Date().toISOString(),
    expiresAt: new Date(Date.now() + 60_000).toISOString(),
    kind: "call",
    id,
    idempotencyKey: id,
    ...fields,
  });
}

describe("the desk refuses an edit outside the schema", () => {
  it.each([
    ["a wrong type", { ...MAIL, to: "ann@ok.test" }],
    ["an extra member of a strict schema", { ...MAIL, bcc: ["x@ok.test"] }],
    ["a recipient off the allowlist", { ...MAIL, to: ["ann@elsewhere.test"] }],
    ["not an object", "send it"],
  ])("%s → invalid_input with issues, nothing written", async (_, input) => {
    const { gate, call } = fixture();
    const { id, expect: seen } = await ask(gate, call);
    const [error] = await bothRefuse(gate, id, gate.authority.owner(), input, seen, "invalid_input");
    expect((error!.details as { issues: unknown[] }).issues.length).toBeGreaterThan(0);
  });

  it("an input larger than maxInputBytes, deeper than JSON can carry, or not JSON → invalid_input", async () => {
    const { gate, call } = fixture({ maxInputBytes: 2048 });
    const { id, expect: seen } = await ask(gate, call);
    let deep: unknown = "x";
    for (let i = 0; i < 20_000; i++) deep = [deep];
    for (const input of [
      { ...MAIL, body: "x".repeat(3000) },
      { ...MAIL, body: deep },
      { ...MAIL, body: 10n },
      { ...MAIL, body: Number.NaN },
    ]) {
      await bothRefuse(gate, id, gate.authority.owner(), input, seen, "invalid_input");
    }
  });

  it("an edit or input that cannot be read (a throwing getter) → invalid_input, not a crash; the edit is read once", async () => {
    const { gate, call } = fixture();
    const { id, expect: seen } = await ask(gate, call);
    const by = gate.authority.owner();
    const request = (await gate.approvals.get(id))!;
    const head = await gate.journal.head();
    // Each option below has one member whose getter throws.
    const unreadable = (target: Record<string, unknown>, name: string) =>
      Object.defineProperty(target, name, {
        enumerable: true,
        get() {
          throw new Error("unreadable");
        },
      });
    const grants = [
      { by, expect: seen, edit: unreadable({ previewHash: seen.previewHash }, "input") },
      { by, expect: seen, edit: unreadable({ input: MAIL }, "previewHash") },
      unreadable({ by, expect: seen }, "edit"),
    ];
    await refused(gate.approvals.previewEdit(id, unreadable({ by, expect: seen }, "input") as never), "invalid_input");
    for (const options of grants) await refused(gate.approvals.grant(id, options as never), "invalid_input");
    await unchanged(gate, head, request);
    // An edit whose getter answers once with an edit and then with nothing is read once: the edit it first gave is checked.
    const input = { ...MAIL, to: ["ann@ok.test"] };
    const { previewHash } = await gate.approvals.previewEdit(id, { by, expect: seen, input });
    let reads = 0;
    const shifty = {
      by,
      expect: seen,
      get edit() {
        return reads++ === 0 ? { input, previewHash } : undefined;
      },
    };
    expect((await gate.approvals.grant(id, shifty as never)).status).toBe("granted");
    expect(reads).toBe(1);
    expect((await gate.approvals.get(id))!.edit?.input).toEqual(input);
  });
});

describe("the desk refuses an edit outside the editable fields", () => {
  it("a change the manifest does not allow (the account) → edit_refused naming the paths", async () => {
    const { gate, call } = fixture();
    const { id, expect: seen } = await ask(gate, call);
    const errors = await bothRefuse(gate, id, gate.authority.owner(), { ...MAIL, account: "boss@ok.test", subject: "Hey" }, seen, "edit_refused");
    for (const e of errors) expect(e.details).toEqual({ paths: ["/account"] });
  });

  it("the same when only the profile narrows it; a nested path under an editable pointer is accepted", async () => {
    const profile = defineProfile({ name: "narrow", allow: ["desk:send"], maxRisk: "critical", approvalEdits: { "desk.*": ["/body", "/meta"] } });
    const { gate, call } = fixture({ profile });
    const { id, expect: seen, request } = await ask(gate, call, "desk.send_mail", { ...MAIL, meta: { tag: "a", lang: "en" } });
    expect(request.editable).toEqual(["/body", "/meta"]);
    const [error] = await bothRefuse(gate, id, gate.authority.owner(), { ...MAIL, to: ["ann@ok.test"], meta: { tag: "a", lang: "en" } }, seen, "edit_refused");
    expect(error!.details).toEqual({ paths: ["/to"] });
    const ok = await gate.approvals.previewEdit(id, { by: gate.authority.owner(), input: { ...MAIL, meta: { tag: "b", lang: "en" } }, expect: seen });
    expect(ok.changes).toEqual([{ path: "/meta/tag", before: "a", after: "b" }]);
  });

  it("a request recorded with wider fields than the manifest allows now (manifest narrowed since) → edit_refused", async () => {
    const { gate, journal } = fixture();
    const { request } = await rawRequest(journal, "apr_wide", { input: MAIL, inputRedacted: false, editable: [""] });
    const [error] = await bothRefuse(
      gate,
      request.id,
      gate.authority.owner(),
      { ...MAIL, account: "boss@ok.test" },
      { version: 0, previewHash: request.previewHash },
      "edit_refused",
    );
    expect(error!.details).toEqual({ paths: ["/account"] });
  });

  it("more than 64 changed members → edit_refused; an edit that changes nothing → edit_refused", async () => {
    const { gate, call } = fixture();
    const { id, expect: seen } = await ask(gate, call, "desk.tag", { tags: {} });
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, "v"]));
    await bothRefuse(gate, id, gate.authority.owner(), { tags: many }, seen, "edit_refused");
    await bothRefuse(gate, id, gate.authority.owner(), { tags: {} }, seen, "edit_refused");
    const ok = await gate.approvals.previewEdit(id, { by: gate.authority.owner(), input: { tags: { k: "v" } }, expect: seen });
    expect(ok.changes).toEqual([{ path: "/tags/k", after: "v" }]);
  });
});

describe("the desk refuses to edit a request that cannot be edited", () => {
  it("a tool with edits: false → edit_refused", async () => {
    const { gate, call } = fixture();
    const { id, expect: seen, request } = await ask(gate, call, "desk.purge", { box: "inbox" });
    expect(request.editable).toBe(false);
    await bothRefuse(gate, id, gate.authority.owner(), { box: "spam" }, seen, "edit_refused");
  });

  it("a held output's request, a mid-call ask, a redacted original, one written without its input → edit_refused", async () => {
    const { gate, journal } = fixture();
    const variants = [
      { kind: "output" as const, editable: false as const },
      { kind: "call" as const, editable: false as const, input: MAIL, inputRedacted: false },
      { kind: "call" as const, editable: ["/body"], input: { ...MAIL, body: "[REDACTED]" }, inputRedacted: true },
      { kind: "call" as const, editable: ["/body"] },
    ];
    for (const [n, variant] of variants.entries()) {
      const { request, created } = await rawRequest(journal, `apr_${n}`, variant);
      expect(created).toBe(true);
      await bothRefuse(
        gate,
        request.id,
        gate.authority.owner(),
        { ...MAIL, body: "changed" },
        { version: 0, previewHash: request.previewHash },
        "edit_refused",
      );
    }
  });
});

describe("the desk refuses an edit carrying a registered secret, and never echoes it", () => {
  const spellings = [
    ["plain", `token ${SECRET}`],
    ["URL-encoded", `token ${encodeURIComponent(SECRET).replaceAll("-", "%2D")}`],
    ["JSON-escaped", `token ${SECRET.replace("-", "\\u002d")}`],
    ["base64", `token ${Buffer.from(SECRET).toString("base64")}`],
  ];
  it.each(spellings)("%s → edit_refused", async (_, body) => {
    const { gate, call } = fixture();
    const { id, expect: seen } = await ask(gate, call);
    const errors = await bothRefuse(gate, id, gate.authority.owner(), { ...MAIL, body }, seen, "edit_refused");
    for (const e of errors) expect(JSON.stringify([e.message, e.details])).not.toContain(body.slice(6));
    const events = JSON.stringify(await gate.journal.readAudit());
    expect(events).not.toContain(SECRET);
  });
});

describe("only an approver who may decide the request may edit it", () => {
  it("a viewer, an approver scoped to other tools, tenants or a lower risk → approver_forbidden; a typed name → approver_invalid", async () => {
    const { gate, call } = fixture();
    const owner = gate.authority.owner();
    await gate.authority.operators.add("vera", { role: "viewer" }, owner);
    await gate.authority.operators.add("otto", { role: "approver", scope: { tools: ["other.*"] } }, owner);
    await gate.authority.operators.add("tina", { role: "approver", scope: { tenants: ["t2"] } }, owner);
    await gate.authority.operators.add("rita", { role: "approver", scope: { maxRisk: "medium" } }, owner);
    const { id, expect: seen } = await ask(gate, call);
    const input = { ...MAIL, to: ["ann@ok.test"] };
    for (const name of ["vera", "otto", "tina", "rita"]) await bothRefuse(gate, id, await gate.authority.actingAs(name), input, seen, "approver_forbidden");
    for (const by of ["owner", { ...owner }]) await bothRefuse(gate, id, by as never, input, seen, "approver_invalid");
  });
});

describe("sessions and linked credentials", () => {
  it("an ended session edits nothing (approver_invalid)", async () => {
    const { gate, call } = fixture();
    const { loginToken } = await gate.authority.operators.add("alma", { role: "approver" }, gate.authority.owner());
    const signedIn = (await gate.authority.login(loginToken))!;
    const { id, expect: seen } = await ask(gate, call);
    await gate.authority.logout(signedIn.session);
    await bothRefuse(gate, id, signedIn.approver, { ...MAIL, to: ["ann@ok.test"] }, seen, "approver_invalid");
  });

  it("two-person: the editor's approval counts once, and a session from a sign-in link the editor issued is not the second person", async () => {
    const { gate, call } = fixture({ profile: defineProfile({ name: "two", allow: ["desk:send"], maxRisk: "critical", twoPersonFrom: "high" }) });
    const owner = gate.authority.owner();
    await gate.authority.operators.add("bea", { role: "admin" }, owner);
    const bea = await gate.authority.actingAs("bea");
    const { loginToken } = await gate.authority.operators.add("carl", { role: "approver" }, bea);
    const carl = (await gate.authority.login(loginToken))!.approver;
    const { id, expect: seen } = await ask(gate, call);
    const shown = await gate.approvals.previewEdit(id, { by: bea, input: { ...MAIL, to: ["ann@ok.test"] }, expect: seen });
    expect((await gate.approvals.grant(id, { by: bea, expect: seen, edit: { input: shown.input, previewHash: shown.previewHash } })).status).toBe(
      "needs_another",
    );
    const v1 = { version: 1, previewHash: shown.previewHash };
    const pending = (await gate.approvals.get(id))!;
    const head = await gate.journal.head();
    await refused(gate.approvals.grant(id, { by: bea, expect: v1 }), "approval_invalid");
    const linked = await refused(gate.approvals.grant(id, { by: carl, expect: v1 }), "approval_invalid");
    expect(linked.message).toMatch(/bea|op_/);
    await unchanged(gate, head, pending);
    expect((await gate.approvals.grant(id, { by: owner, expect: v1 })).status).toBe("granted");
  });
});

describe("only a request still waiting can be edited", () => {
  it("granted, denied or expired → refused, nothing written", async () => {
    let now = Date.now();
    const { gate, call } = fixture({ clock: () => now });
    const owner = gate.authority.owner();
    const input = { ...MAIL, to: ["ann@ok.test"] };
    const granted = await ask(gate, call);
    await gate.approvals.grant(granted.id, { by: owner });
    await bothRefuse(gate, granted.id, owner, input, granted.expect, "approval_consumed");
    const denied = await ask(gate, call, "desk.send_mail", { ...MAIL, subject: "other" });
    await gate.approvals.deny(denied.id, { by: owner, reason: "no" });
    await bothRefuse(gate, denied.id, owner, input, denied.expect, "approval_denied");
    const late = await ask(gate, call, "desk.send_mail", { ...MAIL, subject: "late" });
    now += 25 * 60 * 60_000;
    await bothRefuse(gate, late.id, owner, { ...input, subject: "late" }, late.expect, "approval_expired");
  });
});

describe("a stale view decides nothing", () => {
  it("expect naming another version or preview hash, or missing → approval_invalid", async () => {
    const { gate, call } = fixture();
    const { id, expect: seen } = await ask(gate, call);
    const input = { ...MAIL, to: ["ann@ok.test"] };
    for (const stale of [
      { version: 1, previewHash: seen.previewHash },
      { version: 0, previewHash: "0".repeat(64) },
      undefined,
      { version: "0", previewHash: seen.previewHash },
    ]) {
      await bothRefuse(gate, id, gate.authority.owner(), input, stale, "approval_invalid");
      if (stale !== undefined) await refused(gate.approvals.grant(id, { by: gate.authority.owner(), expect: stale as never }), "approval_invalid");
    }
    // An expect whose getter tells the desk one version and the journal another is read once.
    let reads = 0;
    const shifty = {
      get version() {
        return reads++ === 0 ? 0 : 7;
      },
      previewHash: seen.previewHash,
    };
    expect((await gate.approvals.grant(id, { by: gate.authority.owner(), expect: shifty })).status).toBe("granted");
    expect(reads).toBe(1);
    const throwing = {
      get version(): number {
        throw new Error("no");
      },
      previewHash: seen.previewHash,
    };
    await refused(gate.approvals.grant(id, { by: gate.authority.owner(), expect: throwing }), "approval_invalid");
  });

  it("once edited, a grant without expect, or naming version 0, is refused; naming the edit's version it is granted", async () => {
    const { gate, call } = fixture({ profile: defineProfile({ name: "two", allow: ["desk:send"], maxRisk: "critical", twoPersonFrom: "high" }) });
    const owner = gate.authority.owner();
    await gate.authority.operators.add("alma", { role: "approver" }, owner);
    const alma = await gate.authority.actingAs("alma");
    const { id, expect: seen } = await ask(gate, call);
    const shown = await gate.approvals.previewEdit(id, { by: alma, input: { ...MAIL, to: ["ann@ok.test"] }, expect: seen });
    const first = await gate.approvals.grant(id, { by: alma, expect: seen, edit: { input: shown.input, previewHash: shown.previewHash } });
    expect(first.status).toBe("needs_another");
    const edited = (await gate.approvals.get(id))!;
    const head = await gate.journal.head();
    await refused(gate.approvals.grant(id, { by: owner }), "approval_invalid");
    await refused(gate.approvals.grant(id, { by: owner, expect: seen }), "approval_invalid");
    await unchanged(gate, head, edited);
    const second = await gate.approvals.grant(id, { by: owner, expect: { version: 1, previewHash: shown.previewHash } });
    expect(second.status).toBe("granted");
  });

  it("grant({ edit }) whose recomputed preview differs from what the human saw → approval_invalid, nothing written", async () => {
    const { gate, call, state } = fixture();
    const { id, expect: seen, request } = await ask(gate, call);
    const input = { ...MAIL, to: ["ann@ok.test"] };
    const shown = await gate.approvals.previewEdit(id, { by: gate.authority.owner(), input, expect: seen });
    state.suffix = " (the state moved)";
    const head = await gate.journal.head();
    const error = await refused(
      gate.approvals.grant(id, { by: gate.authority.owner(), expect: seen, edit: { input, previewHash: shown.previewHash } }),
      "approval_invalid",
    );
    expect(error.message).toContain("changed while you looked");
    await unchanged(gate, head, request);
  });
});

describe("previews of edits are bounded per request and approver", () => {
  it(`the 21st previewEdit by one approver is rate_limited; another approver may still preview`, async () => {
    const { gate, call, state } = fixture();
    const owner = gate.authority.owner();
    await gate.authority.operators.add("alma", { role: "approver" }, owner);
    const { id, expect: seen } = await ask(gate, call);
    const input = { ...MAIL, to: ["ann@ok.test"] };
    for (let i = 0; i < 20; i++) await gate.approvals.previewEdit(id, { by: owner, input, expect: seen });
    const ran = state.previews;
    await refused(gate.approvals.previewEdit(id, { by: owner, input, expect: seen }), "rate_limited");
    expect(state.previews).toBe(ran);
    await gate.approvals.previewEdit(id, { by: await gate.authority.actingAs("alma"), input, expect: seen });
    expect(state.previews).toBe(ran + 1);
  });
});

describe("an accepted edit", () => {
  it("previewEdit recomputes the preview as the principal, names the changes and writes nothing", async () => {
    const { gate, call } = fixture();
    const { id, expect: seen, request } = await ask(gate, call);
    const head = await gate.journal.head();
    const shown = await gate.approvals.previewEdit(id, {
      by: gate.authority.owner(),
      input: { ...MAIL, to: ["ann@ok.test"], cc: ["bo@ok.test"] },
      expect: seen,
    });
    expect(shown).toMatchObject({
      requestId: id,
      version: 0,
      input: { ...MAIL, to: ["ann@ok.test"], cc: ["bo@ok.test"] },
      target: "ann@ok.test",
      changes: [
        { path: "/cc", after: ["bo@ok.test"] },
        { path: "/to", before: ["ann@ok.test", "typo@ok.test"], after: ["ann@ok.test"] },
      ],
      findings: [],
    });
    expect(shown.preview.summary).toBe('Send "Hi" to 1 recipient(s)');
    expect(shown.previewHash).not.toBe(request.previewHash);
    await unchanged(gate, head, request);
  });

  it("the preview of an edit opens the connection as the request's principal and tenant, and its tokens leave the redactor after", async () => {
    const opened: { principal: string; tenant: string; toolId: string }[] = [];
    const connectors: ConnectorRuntime = {
      async open(request) {
        opened.push({ principal: request.principal, tenant: request.tenant, toolId: request.toolId });
        request.registerSecret("access-token-for-the-preview");
        return {
          provider: request.provider,
          connectionId: "c1",
          scopes: request.scopes,
          client: async <T>() => ({ token: "access-token-for-the-preview" }) as T,
        };
      },
    };
    const { gate, call } = fixture({ connectors });
    const { id, expect: seen } = await ask(gate, call, "desk.remote_note", { text: "a" });
    const baseSize = gate.redactor.size;
    const shown = await gate.approvals.previewEdit(id, { by: gate.authority.owner(), input: { text: "b" }, expect: seen });
    expect(shown.preview).toMatchObject({ summary: "Post b", details: { as: "agent-1", for: "t1" }, body: `with ${REDACTED}` });
    expect((shown.preview.details as { invocation: string }).invocation).toMatch(/^edit_/);
    expect(opened.at(-1)).toEqual({ principal: "agent-1", tenant: "t1", toolId: "desk.remote_note" });
    expect(gate.redactor.size).toBe(baseSize);
    expect(gate.redactor.contains("access-token-for-the-preview")).toBe(false);
  });

  it("grant({ edit, expect }) stores version 1, the approver, the changes and both hashes, and writes approval.edited", async () => {
    const { gate, call } = fixture();
    const owner = gate.authority.owner();
    const { id, expect: seen, request } = await ask(gate, call);
    const shown = await gate.approvals.previewEdit(id, { by: owner, input: { ...MAIL, to: ["ann@ok.test"] }, expect: seen });
    const decided = await gate.approvals.grant(id, { by: owner, expect: seen, edit: { input: shown.input, previewHash: shown.previewHash } });
    expect(decided.status).toBe("granted");
    const after = (await gate.approvals.get(id))!;
    expect(after.edit).toMatchObject({
      version: 1,
      input: shown.input,
      inputHash: shown.inputHash,
      previewHash: shown.previewHash,
      fromInputHash: request.inputHash,
      by: "owner",
      via: "owner",
      changes: shown.changes,
    });
    expect(after.approvals).toEqual([expect.objectContaining({ by: "owner", version: 1 })]);
    const types = (await gate.journal.readAudit()).map((e) => e.type);
    expect(types.slice(-2)).toEqual(["approval.edited", "approval.granted"]);
  });

  it("two-person: an approval of version 0 stops counting after another approver's edit; the editor counts once per version", async () => {
    const { gate, call } = fixture({ profile: defineProfile({ name: "two", allow: ["desk:send"], maxRisk: "critical", twoPersonFrom: "high" }) });
    const owner = gate.authority.owner();
    for (const name of ["ada", "bob"]) await gate.authority.operators.add(name, { role: "approver" }, owner);
    const [ada, bob] = [await gate.authority.actingAs("ada"), await gate.authority.actingAs("bob")];
    const { id, expect: seen } = await ask(gate, call);
    expect((await gate.approvals.grant(id, { by: ada, expect: seen })).status).toBe("needs_another");
    const shown = await gate.approvals.previewEdit(id, { by: bob, input: { ...MAIL, to: ["ann@ok.test"] }, expect: seen });
    const edited = await gate.approvals.grant(id, { by: bob, expect: seen, edit: { input: shown.input, previewHash: shown.previewHash } });
    expect(edited.status).toBe("needs_another");
    const v1 = { version: 1, previewHash: shown.previewHash };
    await refused(gate.approvals.grant(id, { by: bob, expect: v1 }), "approval_invalid");
    expect((await gate.approvals.get(id))!.status).toBe("pending");
    expect((await gate.approvals.grant(id, { by: ada, expect: v1 })).status).toBe("granted");
  });
});

describe("telemetry", () => {
  it("a grant with an edit is counted as granted and edited; a plain grant is not marked edited", async () => {
    class Reader extends MetricReader {
      protected override async onForceFlush(): Promise<void> {}
      protected override async onShutdown(): Promise<void> {}
    }
    const reader = new Reader();
    const { gate, call } = fixture({ meterProvider: new MeterProvider({ readers: [reader] }) });
    const owner = gate.authority.owner();
    const edited = await ask(gate, call);
    const shown = await gate.approvals.previewEdit(edited.id, { by: owner, input: { ...MAIL, to: ["ann@ok.test"] }, expect: edited.expect });
    await gate.approvals.grant(edited.id, { by: owner, expect: edited.expect, edit: { input: shown.input, previewHash: shown.previewHash } });
    await gate.approvals.grant((await ask(gate, call, "desk.send_mail", { ...MAIL, subject: "plain" })).id, { by: owner });
    const data = (await reader.collect()).resourceMetrics;
    const count = (match: Record<string, unknown>) => metricTotal(data, "toolgate.approvals", { "toolgate.tool.id": "desk.send_mail", ...match });
    expect([count({ "toolgate.approval.decision": "granted" }), count({ "toolgate.approval.decision": "granted", "toolgate.approval.edited": true })]).toEqual([
      2, 1,
    ]);
  });
});
