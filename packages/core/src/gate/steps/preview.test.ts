import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ConnectorRuntime } from "../../context.js";
import { ToolError } from "../../errors.js";
import { defineTool } from "../../manifest.js";
import { setup, base } from "../fixtures/gate-harness.js";

describe("gate step: preview", () => {
  it("5. a preview that fails or is malformed refuses the call before any intent", async () => {
    const broken = (preview: () => unknown) =>
      defineTool({
        id: "notes.broken_preview",
        title: "Broken",
        description: "Has a broken preview.",
        input: z.object({}),
        output: z.object({}),
        actionType: "notes-write",
        effect: "write",
        requiredAllowlist: ["notes:write"],
        risk: "low",
        approval: "always",
        preview: preview as never,
        idempotent: true,
        retryable: true,
        reversible: true,
        runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
        untrustedOutput: false,
        handler: () => ({}),
      });
    for (const preview of [
      () => {
        throw new Error("boom");
      },
      () => ({ summary: "" }),
      () => "text",
      () => ({ summary: "ok", details: [1] }),
    ]) {
      const { gate, journal } = setup({ extraTools: [broken(preview)] });
      const result = await gate.invoke("notes.broken_preview", {}, base);
      expect(result).toMatchObject({ status: "error", code: "preview_invalid", boundary: "pre_effect_refusal" });
      expect(await journal.listOutbox()).toEqual([]);
      expect(await journal.listApprovals()).toEqual([]);
    }
  });

  it("5. a preview that never finishes is cut off at the tool's deadline; nothing is requested", async () => {
    const hanging = defineTool({
      id: "notes.slow_preview",
      title: "Slow preview",
      description: "Its preview hangs.",
      input: z.object({}),
      output: z.object({}),
      actionType: "notes-write",
      effect: "write",
      requiredAllowlist: ["notes:write"],
      risk: "low",
      approval: "always",
      preview: () => new Promise<never>(() => undefined),
      idempotent: true,
      retryable: true,
      reversible: true,
      timeoutMs: 30,
      runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
      untrustedOutput: false,
      handler: () => ({}),
    });
    const { gate, journal } = setup({ extraTools: [hanging] });
    expect(await gate.invoke("notes.slow_preview", {}, base)).toMatchObject({ status: "error", code: "timeout", boundary: "pre_effect_refusal" });
    expect(await journal.listApprovals()).toEqual([]);
  });

  it("a preview opens the connector (and reads a token) only if it asks for the client", async () => {
    const opened: string[] = [];
    const runtime: ConnectorRuntime = {
      async open(request) {
        opened.push(request.toolId);
        return { provider: request.provider, connectionId: "c1", scopes: request.scopes, client: async <T>() => ({ subject: "from the provider" }) as T };
      },
    };
    const make = (id: string, usesClient: boolean) =>
      defineTool({
        id,
        title: "Send",
        description: "Sends through a provider.",
        input: z.object({ to: z.string() }),
        output: z.object({}),
        actionType: "notes-write",
        effect: "write",
        requiredAllowlist: ["notes:write"],
        risk: "medium",
        approval: "always",
        preview: async (input, ctx) => ({
          summary: usesClient ? `Reply to ${(await ctx.connector!.client<{ subject: string }>()).subject}` : `Send to ${input.to}`,
        }),
        idempotent: false,
        retryable: false,
        reversible: false,
        connector: { provider: "mail", scopes: ["mail.send"] },
        runtimeIsolation: { network: "provider", filesystem: "none", secrets: "connector", subprocess: "none" },
        untrustedOutput: false,
        handler: () => ({}),
      });
    const { gate } = setup({ connectors: runtime, extraTools: [make("notes.send_plain", false), make("notes.send_reply", true)] });
    expect(await gate.invoke("notes.send_plain", { to: "a" }, base)).toMatchObject({ status: "approval_required", preview: { summary: "Send to a" } });
    expect(opened).toEqual([]);
    expect(await gate.invoke("notes.send_reply", { to: "a" }, base)).toMatchObject({
      status: "approval_required",
      preview: { summary: "Reply to from the provider" },
    });
    expect(opened).toEqual(["notes.send_reply"]);
  });

  it("a connection that could not run the call is refused before a human is asked (the runtime's token-free check)", async () => {
    const checked: string[] = [];
    const opened: string[] = [];
    const runtime: ConnectorRuntime = {
      async check(request) {
        checked.push(request.toolId);
        throw new ToolError("scope_missing", "connection c1 lacks mail.send");
      },
      async open(request) {
        opened.push(request.toolId);
        return { provider: request.provider, connectionId: "c1", scopes: request.scopes, client: async <T>() => ({}) as T };
      },
    };
    const tool = defineTool({
      id: "notes.send_checked",
      title: "Send",
      description: "Sends through a provider.",
      input: z.object({ to: z.string() }),
      output: z.object({}),
      actionType: "notes-write",
      effect: "write",
      requiredAllowlist: ["notes:write"],
      risk: "medium",
      approval: "always",
      preview: (input) => ({ summary: `Send to ${input.to}` }),
      idempotent: false,
      retryable: false,
      reversible: false,
      connector: { provider: "mail", scopes: ["mail.send"] },
      runtimeIsolation: { network: "provider", filesystem: "none", secrets: "connector", subprocess: "none" },
      untrustedOutput: false,
      handler: () => ({}),
    });
    const { gate, journal } = setup({ connectors: runtime, extraTools: [tool] });
    expect(await gate.invoke("notes.send_checked", { to: "a" }, base)).toMatchObject({
      status: "error",
      code: "scope_missing",
      boundary: "pre_effect_refusal",
    });
    expect(checked).toEqual(["notes.send_checked"]);
    expect(opened).toEqual([]);
    expect(await journal.listApprovals()).toEqual([]);
  });
});
