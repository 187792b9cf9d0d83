import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ToolContext } from "../context.js";
import { ToolError, type EffectBoundary } from "../errors.js";
import { defineTool, withHandler, type AnyToolManifest, type ApprovalPreview } from "../manifest.js";
import { grantAsOwner } from "../testing/approver.js";
import { recoverOutbox } from "../recovery.js";
import { base, setup } from "./fixtures/gate-harness.js";

const iso = { network: "none", filesystem: "none", secrets: "none", subprocess: "none" } as const;
/** The fields every test tool here shares: a medium-risk note write. */
const writeFields = {
  input: z.object({ key: z.string() }),
  output: z.object({ done: z.string() }),
  actionType: "note-write",
  effect: "write",
  requiredAllowlist: ["notes:write"],
  risk: "medium",
  retryable: false,
  reversible: false,
  runtimeIsolation: iso,
  untrustedOutput: false,
} as const;

/**
 * A write whose body finds, before acting, that it needs a human (as a tool process's escalation
 * does). It remembers the ask, so the same input then asks for the same preview before the body.
 */
function askingTool(options: { boundary?: EffectBoundary; preview?: (key: string) => unknown } = {}): { tool: AnyToolManifest; seen: unknown[] } {
  const asked = new Set<string>();
  const seen: unknown[] = [];
  const previewFor = options.preview ?? ((key: string): ApprovalPreview => ({ summary: `notes.ask_first wants a human for ${key}`, plan: { approved: key } }));
  const tool = defineTool({
    id: "notes.ask_first",
    title: "Ask first",
    description: "A write that asks a human mid-call.",
    ...writeFields,
    idempotent: false,
    approval: (input: { key: string }) => asked.has(input.key),
    preview: (input: { key: string }) => previewFor(input.key) as ApprovalPreview,
    handler: ({ key }: { key: string }, ctx: ToolContext) => {
      seen.push(ctx.plan);
      if ((ctx.plan as { approved?: string } | undefined)?.approved === key) return { done: key };
      asked.add(key);
      throw new ToolError("approval_unknown", `notes.ask_first needs a human for ${key}`, {
        boundary: options.boundary ?? "effect_not_started",
        askApproval: previewFor(key) as ApprovalPreview,
      });
    },
  } as never) as AnyToolManifest;
  return { tool, seen };
}

describe("a body that asks for a human before its effect", () => {
  it("gets approval_required in the same round trip; the attempt is settled before its effect and the request bound to this call", async () => {
    const { tool, seen } = askingTool();
    const { gate, journal, calls } = setup({ extraTools: [tool] });
    const asked = await gate.invoke("notes.ask_first", { key: "k1" }, base);
    if (asked.status !== "approval_required") throw new Error(`expected approval_required, got ${JSON.stringify(asked)}`);
    expect(asked).toMatchObject({ reason: "call", preview: { summary: "notes.ask_first wants a human for k1", plan: { approved: "k1" } } });
    expect(calls("notes.ask_first")).toBe(1);
    const request = await journal.getApproval(asked.requestId);
    expect(request).toMatchObject({ status: "pending", toolId: "notes.ask_first", principal: "agent-1", tenant: "tenant-a", previewHash: asked.previewHash });
    const types = (await journal.readAudit()).map((e) => e.type);
    expect(types.slice(-3)).toEqual(["intent.recorded", "intent.settled", "approval.requested"]);
    // Granted, the same call takes the grant, and the body gets the approved plan.
    const grant = await grantAsOwner(gate, asked.requestId);
    expect(await gate.invoke("notes.ask_first", { key: "k1" }, { ...base, approval: grant })).toMatchObject({ status: "ok", output: { done: "k1" } });
    expect(seen).toEqual([undefined, { approved: "k1" }]);
  });

  it.each(["effect_started", "effect_state_unknown", "effect_failed"] as const)(
    "an ask made after the effect may have begun (%s) is never turned into a request: the call fails as the body said",
    async (boundary) => {
      const { tool } = askingTool({ boundary });
      const { gate, journal } = setup({ extraTools: [tool] });
      const result = await gate.invoke("notes.ask_first", { key: "k2" }, base);
      expect(result.status).toBe("error");
      expect(await journal.listApprovals()).toEqual([]);
    },
  );

  it("an ask with a preview the gate would refuse is refused the same way (preview_invalid), and no human is asked", async () => {
    const { tool } = askingTool({ preview: () => ({ summary: "" }) });
    const { gate, journal } = setup({ extraTools: [tool] });
    expect(await gate.invoke("notes.ask_first", { key: "k3" }, base)).toMatchObject({
      status: "error",
      code: "preview_invalid",
      boundary: "effect_not_started",
    });
    expect(await journal.listApprovals()).toEqual([]);
  });

  it("the preview is redacted before a human or the journal sees it; a plan carrying a secret is refused", async () => {
    const secret = "sk-live-0123456789";
    const shown = askingTool({ preview: (key) => ({ summary: `send ${secret} for ${key}` }) });
    const first = setup({ extraTools: [shown.tool], secrets: [secret] });
    const asked = await first.gate.invoke("notes.ask_first", { key: "k4" }, base);
    expect(asked).toMatchObject({ status: "approval_required", preview: { summary: "send [REDACTED] for k4" } });
    expect(JSON.stringify(await first.journal.readAudit())).not.toContain(secret);
    const planned = askingTool({ preview: (key) => ({ summary: `for ${key}`, plan: { token: secret } }) });
    const second = setup({ extraTools: [planned.tool], secrets: [secret] });
    expect(await second.gate.invoke("notes.ask_first", { key: "k5" }, base)).toMatchObject({ status: "error", code: "preview_invalid" });
    expect(await second.journal.listApprovals()).toEqual([]);
  });
});

/** A body that throws a ToolError asking with `preview` (read as the body gives it: a getter, a proxy). */
function hostileAsk(id: string, preview: () => unknown, options: { idempotent?: boolean; hangFirst?: boolean } = {}): AnyToolManifest {
  let hang = options.hangFirst === true;
  return defineTool({
    id,
    title: "Hostile ask",
    description: "A write whose ask is hostile.",
    ...writeFields,
    idempotent: options.idempotent ?? false,
    approval: "never",
    handler: () => {
      if (hang) {
        hang = false;
        return new Promise<never>(() => undefined); // the process "crashed" after its intent
      }
      throw new ToolError("approval_unknown", `${id} asks`, { boundary: "effect_not_started", askApproval: preview() as ApprovalPreview });
    },
  } as never) as AnyToolManifest;
}

describe("a hostile mid-call ask", () => {
  const getterBomb = () => ({
    get summary(): string {
      throw new Error("boom from a getter");
    },
  });
  const revoked = () => {
    const r = Proxy.revocable({ summary: "x" }, {});
    r.revoke();
    return r.proxy;
  };
  it.each([
    ["a preview whose getter throws", getterBomb],
    ["a preview that is a revoked proxy", revoked],
  ])("%s is refused before any effect (preview_invalid, effect_not_started), journaled, and no human is asked", async (_name, preview) => {
    const { gate, journal } = setup({ extraTools: [hostileAsk("notes.hostile_ask", preview)] });
    const result = await gate.invoke("notes.hostile_ask", { key: "h1" }, base);
    expect(result).toMatchObject({ status: "error", code: "preview_invalid", boundary: "effect_not_started" });
    expect(await journal.listApprovals()).toEqual([]);
    expect(await journal.listOutbox({ states: ["pending"] })).toEqual([]);
    expect((await journal.readAudit()).map((e) => e.type)).toContain("intent.settled");
  });

  it("an error whose askApproval getter throws is read as any other failure before the effect: no human is asked, nothing left pending", async () => {
    const tool = hostileAsk("notes.bomb_ask", () => ({ summary: "unused" }));
    const throwing = withHandler(tool, () => () => {
      const error = new ToolError("approval_unknown", "asks with a bomb", { boundary: "effect_not_started" });
      Object.defineProperty(error, "askApproval", {
        get() {
          throw new Error("boom from askApproval");
        },
      });
      throw error;
    });
    const { gate, journal } = setup({ extraTools: [throwing] });
    expect(await gate.invoke("notes.bomb_ask", { key: "b1" }, base)).toMatchObject({
      status: "error",
      code: "approval_unknown",
      boundary: "effect_not_started",
    });
    expect(await journal.listApprovals()).toEqual([]);
    expect(await journal.listOutbox({ states: ["pending"] })).toEqual([]);
  });

  it("a preview that reads differently each time is checked on one plain copy: that copy is what is refused or shown and hashed", async () => {
    let reads = 0;
    const flipping = () => ({
      get summary(): unknown {
        return ++reads === 1 ? "looks fine" : { not: "a string" };
      },
    });
    const { gate, journal } = setup({ extraTools: [hostileAsk("notes.flip_ask", flipping)] });
    const asked = await gate.invoke("notes.flip_ask", { key: "f1" }, base);
    expect(asked).toMatchObject({ status: "error", code: "preview_invalid", boundary: "effect_not_started" });
    expect(await journal.listApprovals()).toEqual([]);
    expect(await journal.listOutbox({ states: ["pending"] })).toEqual([]);
  });

  it("recovery's replay never asks a human (nobody called): the entry is left unknown for an operator, no request is recorded", async () => {
    const { gate, journal } = setup({
      extraTools: [hostileAsk("notes.replay_ask", () => ({ summary: "replay wants a human" }), { idempotent: true, hangFirst: true })],
    });
    void gate.invoke("notes.replay_ask", { key: "r1" }, { ...base, idempotencyKey: "r1" });
    await new Promise((r) => setTimeout(r, 10));
    expect(await journal.listOutbox({ states: ["pending"] })).toHaveLength(1);
    const report = await recoverOutbox(gate, { olderThanMs: 0 });
    expect(report).toMatchObject({ claimed: 1, unknown: 1, replayed: 0 });
    expect(await journal.listApprovals()).toEqual([]);
    expect(await journal.listOutbox({ states: ["unknown"] })).toHaveLength(1);
  });
});
