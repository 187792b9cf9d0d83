import { fileURLToPath } from "node:url";
import { createGate, createMemoryJournal, createToolRegistry, defineProfile, type OkResult } from "@toolgate/core";
import { buildInventory } from "@toolgate/core/operator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { importMcpServer, type ImportedMcpServer, type ImportMcpServerOptions } from "./import.js";

const server = fileURLToPath(new URL("../fixtures/remote-mcp-server.mjs", import.meta.url));
// The fixture loads the SDK from the repository's node_modules: the sandbox must let it read them.
const sandbox = { kind: "auto", readOnlyPaths: [fileURLToPath(new URL("../../../..", import.meta.url))] } as const;
const profile = defineProfile({ name: "remote", allow: ["remote:echo", "remote:wipe", "remote:env", "remote:fail"], maxRisk: "high" });
const call = { principal: "agent", tenant: "tests", profile };

const described: ImportMcpServerOptions["tools"] = {
  echo: { requiredAllowlist: ["remote:echo"], effect: "read", risk: "low", approval: "never" },
  // The server claims read-only, idempotent, non-destructive; the operator knows better.
  wipeDisk: { requiredAllowlist: ["remote:wipe"], effect: "destructive", risk: "high", approval: "always" },
  env_keys: { requiredAllowlist: ["remote:env"], effect: "read", risk: "low", approval: "never" },
  call_count: { requiredAllowlist: ["remote:env"], effect: "read", risk: "low", approval: "never" },
  fail: { requiredAllowlist: ["remote:fail"], effect: "write", risk: "low", approval: "never" },
  poison: { requiredAllowlist: ["remote:fail"], effect: "write", risk: "low", approval: "never" },
  not_on_server: { requiredAllowlist: ["remote:echo"], effect: "read", risk: "low", approval: "never" },
};

let imported: ImportedMcpServer;
let gate: ReturnType<typeof createGate>;

async function remoteCalls(): Promise<number> {
  const r = await gate.invoke("remote.call_count", {}, call);
  if (r.status !== "ok") throw new Error(r.status);
  return Number((r as OkResult<{ content: { text: string }[] }>).output.content[0]!.text);
}

beforeAll(async () => {
  process.env["TOOLGATE_TEST_SECRET"] = "must-not-leak";
  imported = await importMcpServer({ name: "remote", command: process.execPath, args: [server], env: { REMOTE_MODE: "test" }, tools: described, sandbox });
  gate = createGate({ registry: createToolRegistry({ families: [imported.family] }), journal: createMemoryJournal() });
});
afterAll(async () => {
  await imported?.close();
});

describe("importMcpServer against a real MCP server over stdio", () => {
  it("tools the operator did not describe are not registered, and are reported as skipped", async () => {
    expect(gate.registry.ids()).not.toContain("remote.exfiltrate");
    expect(imported.skipped.map((s) => s.name)).toEqual(["exfiltrate"]);
    expect(imported.missing).toEqual(["not_on_server"]);
    const refused = await gate.invoke("remote.exfiltrate", { data: "x" }, call);
    expect(refused).toMatchObject({ status: "error", code: "unknown_tool" });
    expect(buildInventory(gate.registry, { profiles: [profile] }).tools.map((t) => t.id)).not.toContain("remote.exfiltrate");
  });

  it("remote annotations never loosen the operator's manifest", async () => {
    const wipe = gate.registry.describe("remote.wipe_disk")!;
    expect(wipe).toMatchObject({ effect: "destructive", approval: "always", idempotent: false, untrustedOutput: true, risk: "high" });
    expect(imported.warnings.join("\n")).not.toContain("wipeDisk: the server hints");
    const before = await remoteCalls();
    const result = await gate.invoke("remote.wipe_disk", { path: "/" }, call);
    expect(result).toMatchObject({ status: "approval_required", preview: { summary: "Call wipeDisk on the MCP server remote" } });
    expect(await remoteCalls()).toBe(before + 0);
  });

  it("invalid input is refused by the gate before it reaches the server", async () => {
    const before = await remoteCalls();
    for (const input of [{ text: 5 }, { text: "x".repeat(101) }, {}]) {
      expect(await gate.invoke("remote.echo", input, call)).toMatchObject({ status: "error", code: "invalid_input", boundary: "pre_effect_refusal" });
    }
    expect(await remoteCalls()).toBe(before);
  });

  it("a stdio server gets only the allowlisted environment", async () => {
    const r = await gate.invoke("remote.env_keys", {}, call);
    expect(r.status).toBe("ok");
    const keys = JSON.parse((r as OkResult<{ content: { text: string }[] }>).output.content[0]!.text) as string[];
    // Bubblewrap sets PWD to the directory it starts the server in; nothing of the host's.
    expect(keys.filter((k) => !k.startsWith("NODE_") && k !== "_" && k !== "PWD")).toEqual(["PATH", "REMOTE_MODE"]);
    expect(keys).not.toContain("TOOLGATE_TEST_SECRET");
    expect(keys).not.toContain("HOME");
  });

  it("output is untrusted and fenced; remote errors become provider_rejected", async () => {
    const ok = await gate.invoke("remote.echo", { text: "hi" }, call);
    expect(ok).toMatchObject({ status: "ok", untrusted: true });
    expect((ok as OkResult<unknown>).content).toContain("echo: hi");
    const failed = await gate.invoke("remote.fail", {}, call);
    expect(failed).toMatchObject({ status: "error", code: "provider_rejected", boundary: "effect_failed" });
  });

  it("tool-definition drift refuses calls until the operator re-approves", async () => {
    expect(await imported.drift()).toEqual([]);
    const digest = imported.digests["echo"];
    expect(await gate.invoke("remote.poison", {}, call)).toMatchObject({ status: "ok" });
    const before = await remoteCalls();
    const refused = await gate.invoke("remote.echo", { text: "after the change" }, call);
    expect(refused).toMatchObject({ status: "error", code: "provider_rejected", boundary: "effect_not_started" });
    expect((refused as { message: string }).message).toContain("tool definition drift");
    expect(await remoteCalls()).toBe(before);
    const drift = await imported.drift();
    expect(drift).toEqual([{ name: "echo", id: "remote.echo", approved: digest, current: expect.any(String) }]);
    // The model still reads the description approved at registration, not the poisoned one.
    expect(gate.registry.describe("remote.echo")?.description).toBe("Echo the text back.");
    await imported.reapprove(["echo"]);
    expect(await gate.invoke("remote.echo", { text: "again" }, call)).toMatchObject({ status: "ok" });
  });
});

describe("importMcpServer: configuration", () => {
  it("refuses a server whose described tools are all missing, and a pinned digest that no longer matches", async () => {
    await expect(
      importMcpServer({ name: "remote", command: process.execPath, args: [server], sandbox, tools: { nope: described["echo"]! } }),
    ).rejects.toMatchObject({
      code: "config_invalid",
    });
    const pinned = await importMcpServer({
      name: "remote",
      command: process.execPath,
      args: [server],
      sandbox,
      tools: { echo: described["echo"]! },
      approvedDigests: { echo: "0".repeat(64) },
    });
    try {
      const g = createGate({ registry: createToolRegistry({ families: [pinned.family] }), journal: createMemoryJournal() });
      expect(await g.invoke("remote.echo", { text: "x" }, call)).toMatchObject({ status: "error", code: "provider_rejected" });
    } finally {
      await pinned.close();
    }
  });

  it("an operator's stricter input schema wins over the server's", async () => {
    const strict = await importMcpServer({
      name: "remote",
      command: process.execPath,
      args: [server],
      sandbox,
      tools: { echo: { ...described["echo"]!, input: z.object({ text: z.enum(["yes", "no"]) }).strict() } },
    });
    try {
      const g = createGate({ registry: createToolRegistry({ families: [strict.family] }), journal: createMemoryJournal() });
      expect(await g.invoke("remote.echo", { text: "maybe" }, call)).toMatchObject({ status: "error", code: "invalid_input" });
      expect(await g.invoke("remote.echo", { text: "yes" }, call)).toMatchObject({ status: "ok" });
    } finally {
      await strict.close();
    }
  });
});
