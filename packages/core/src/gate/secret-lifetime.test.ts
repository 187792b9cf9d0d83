/** Secrets leave the gate's redactor when what held them ends: a grant when it is used or expires, a connection's tokens with the call that read them. */
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import type { ConnectorRuntime } from "../context.js";
import { createMemoryVault } from "../connectors/memory-vault.js";
import { createConnectorRuntime } from "../connectors/runtime.js";
import { defineTool } from "../manifest.js";
import { REDACTED } from "../redactor.js";
import { approve, base, setup } from "./fixtures/gate-harness.js";

const remote = (over: Record<string, unknown> = {}) =>
  defineTool({
    id: "notes.remote_echo",
    title: "Remote",
    description: "Echoes its connection's token.",
    input: z.object({}),
    output: z.object({ echoed: z.string() }),
    actionType: "notes-read",
    effect: "read",
    requiredAllowlist: ["notes:read"],
    risk: "low",
    approval: "never",
    connector: { provider: "mail", scopes: ["mail.read"] },
    runtimeIsolation: { network: "provider", filesystem: "none", secrets: "connector", subprocess: "none" },
    untrustedOutput: false,
    handler: async (_input: unknown, ctx: { connector?: { client<T>(): Promise<T> } }) => ({
      echoed: `token ${(await ctx.connector!.client<{ token: string }>()).token}`,
    }),
    ...over,
  } as never);

describe("a grant's token leaves the redactor when the grant is used or expires", () => {
  it("registers the token while the grant can be used and drops it once the call consumes it", async () => {
    const { gate } = setup({ secrets: ["gate-secret-1"] });
    const baseSize = gate.redactor.size;
    const { grant } = await approve(gate, "notes.add_note", { id: "a", text: "x" });
    expect(gate.redactor.contains(grant.token)).toBe(true);
    expect(await gate.invoke("notes.add_note", { id: "a", text: "x" }, { ...base, approval: grant })).toMatchObject({ status: "ok" });
    expect(gate.redactor.contains(grant.token)).toBe(false);
    expect(gate.redactor.size).toBe(baseSize);
  });

  it("returns to its base size after many grants, whether used or left to expire", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.parse("2026-01-01T00:00:00Z") });
    try {
      const { gate } = setup({ secrets: ["gate-secret-1"] });
      const baseSize = gate.redactor.size;
      const unused: string[] = [];
      for (let i = 0; i < 40; i++) {
        const { grant } = await approve(gate, "notes.add_note", { id: `n${i}`, text: "x" });
        if (i % 2 === 0) expect(await gate.invoke("notes.add_note", { id: `n${i}`, text: "x" }, { ...base, approval: grant })).toMatchObject({ status: "ok" });
        else unused.push(grant.token);
      }
      expect(gate.redactor.size).toBe(baseSize + 20);
      expect(gate.redactor.redactText(unused[0]!)).toBe(REDACTED);
      vi.setSystemTime(Date.now() + 10 * 60_000); // the default grant lifetime
      expect(gate.redactor.size).toBe(baseSize);
      expect(gate.redactor.redactText(unused[0]!)).toBe(unused[0]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("a connection's tokens are held while a call uses them", () => {
  it("redacts the token in the call's output, then lets it go when the call ends", async () => {
    const runtime: ConnectorRuntime = {
      async open(request) {
        request.registerSecret("access-token-for-this-call");
        return {
          provider: request.provider,
          connectionId: "c1",
          scopes: request.scopes,
          client: async <T>() => ({ token: "access-token-for-this-call" }) as T,
        };
      },
    };
    const { gate } = setup({ connectors: runtime, extraTools: [remote()] });
    const baseSize = gate.redactor.size;
    for (let i = 0; i < 5; i++) {
      expect(await gate.invoke("notes.remote_echo", {}, base)).toMatchObject({ status: "ok", output: { echoed: `token ${REDACTED}` } });
      expect(gate.redactor.size).toBe(baseSize);
    }
  });

  it("with the real token runtime: the access and refresh tokens and the client secret are held for the call only", async () => {
    const vault = createMemoryVault();
    await vault.put(
      { id: "mail-1", provider: "mail" },
      {
        accessToken: "access-real-token-1",
        refreshToken: "refresh-real-token-1",
        expiresAt: Date.now() + 3_600_000,
        scopes: ["mail.read"],
        tokenType: "Bearer",
      },
    );
    const runtime = createConnectorRuntime({
      vault,
      providers: [
        {
          provider: "mail",
          secrets: ["client-secret-xyz"],
          refresh: () => Promise.reject(new Error("not needed")),
          createClient: (grant) => ({ token: grant.accessToken }),
        },
      ],
    });
    const { gate } = setup({ connectors: runtime, extraTools: [remote()] });
    const baseSize = gate.redactor.size;
    expect(await gate.invoke("notes.remote_echo", {}, base)).toMatchObject({ status: "ok", output: { echoed: `token ${REDACTED}` } });
    expect(gate.redactor.size).toBe(baseSize);
    expect(gate.redactor.contains("access-real-token-1 refresh-real-token-1 client-secret-xyz")).toBe(false);
  });
});
