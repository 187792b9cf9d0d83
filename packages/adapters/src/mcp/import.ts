import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import {
  canonicalJson,
  defineFamily,
  defineTool,
  scanForInjection,
  sha256Hex,
  ToolError,
  type AnyToolManifest,
  type ApprovalPreview,
  type ApprovalRule,
  type DataClass,
  type Effect,
  type RiskLevel,
  type RuntimeIsolation,
  type ToolFamily,
  type Visibility,
} from "@toolgate/core";
import { z } from "zod";

export type { DriftReport, ImportedMcpServer, ImportedToolDescription, ImportMcpServerOptions, SkippedTool } from "./import-options.js";
import type { DriftReport, ImportedMcpServer, ImportedToolDescription, ImportMcpServerOptions, SkippedTool } from "./import-options.js";

export function definitionDigest(tool: Pick<McpTool, "name" | "description" | "inputSchema">): string {
  return sha256Hex(canonicalJson({ name: tool.name, description: tool.description ?? null, inputSchema: tool.inputSchema }));
}

const mcpContent = z.object({
  content: z.array(z.record(z.string(), z.unknown())),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
});

const RANK: Record<Effect, number> = { none: 0, read: 1, write: 2, destructive: 3 };

/**
 * Connect to someone else's MCP server and turn each tool the operator described into a manifest
 * (`defineTool`): operator fields win, output is always untrusted, undescribed tools are skipped,
 * and a change in a tool's definition after approval refuses its calls (`provider_rejected`,
 * "tool definition drift") until the operator re-approves.
 */
export async function importMcpServer(options: ImportMcpServerOptions): Promise<ImportedMcpServer> {
  if (!options || typeof options.name !== "string") throw new ToolError("config_invalid", "importMcpServer needs a name");
  if ((options.command === undefined) === (options.url === undefined))
    throw new ToolError("config_invalid", "importMcpServer needs exactly one of command or url");
  const client = new Client({ name: `toolgate-import-${options.name}`, version: "0.1.0" });
  const transport = options.command !== undefined ? stdioTransport(options) : new StreamableHTTPClientTransport(new URL(options.url!));
  try {
    await client.connect(transport);
  } catch (cause) {
    throw new ToolError("provider_unavailable", `could not connect to MCP server ${options.name}: ${(cause as Error).message}`, { cause });
  }

  const listAll = async (): Promise<Map<string, McpTool>> => {
    const found = new Map<string, McpTool>();
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      for (const t of page.tools) found.set(t.name, t);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return found;
  };

  let remote: Map<string, McpTool>;
  try {
    remote = await listAll();
  } catch (cause) {
    await client.close().catch(() => undefined);
    throw new ToolError("provider_unavailable", `MCP server ${options.name} did not list its tools: ${(cause as Error).message}`, { cause });
  }

  const approved = new Map<string, string>();
  const current = new Map<string, string | null>();
  const skipped: SkippedTool[] = [];
  const missing: string[] = [];
  const warnings: string[] = [];
  const manifests: AnyToolManifest[] = [];
  const idOf = new Map<string, string>();

  for (const [name, tool] of remote) {
    if (!Object.hasOwn(options.tools, name)) skipped.push({ name, reason: "not described by the operator", digest: definitionDigest(tool) });
  }
  for (const [name, described] of Object.entries(options.tools)) {
    const tool = remote.get(name);
    if (!tool) {
      missing.push(name);
      continue;
    }
    const digest = definitionDigest(tool);
    approved.set(name, options.approvedDigests?.[name] ?? digest);
    current.set(name, digest);
    warnings.push(...hintWarnings(options.name, tool, described));
    const id = described.id ?? `${options.name}.${snake(name)}`;
    idOf.set(name, id);
    manifests.push(manifestFor(options, name, id, tool, described));
  }
  if (manifests.length === 0) {
    await client.close().catch(() => undefined);
    throw new ToolError(
      "config_invalid",
      `MCP server ${options.name}: none of the described tools (${Object.keys(options.tools).join(", ") || "none"}) is offered`,
    );
  }

  // ---- drift: the server's current definitions against the approved digests ----
  let refreshing: Promise<void> | undefined;
  const refresh = (): Promise<void> =>
    (refreshing ??= listAll()
      .then((tools) => {
        for (const name of approved.keys()) {
          const t = tools.get(name);
          current.set(name, t ? definitionDigest(t) : null);
        }
      })
      .finally(() => {
        refreshing = undefined;
      }));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    void refresh().catch(() => undefined);
  });
  const driftOf = (name: string): DriftReport | undefined => {
    const a = approved.get(name)!;
    const c = current.get(name) ?? null;
    return a === c ? undefined : { name, id: idOf.get(name)!, approved: a, current: c };
  };

  async function callRemote(
    name: string,
    input: Record<string, unknown>,
    ctx: { signal: AbortSignal; progress(e: { message: string; fraction?: number }): void },
    timeoutMs: number,
  ) {
    if ((options.driftCheck ?? "every-call") === "every-call") {
      try {
        await refresh();
      } catch (cause) {
        throw new ToolError("provider_unavailable", `MCP server ${options.name} did not list its tools`, {
          cause,
          boundary: "effect_not_started",
          retryable: true,
        });
      }
    }
    const drift = driftOf(name);
    if (drift) {
      throw new ToolError(
        "provider_rejected",
        `tool definition drift: ${options.name}/${name} changed since it was approved; calls are refused until the operator re-approves`,
        { boundary: "effect_not_started", details: { drift: true, ...drift } },
      );
    }
    let result;
    try {
      result = await client.callTool({ name, arguments: input }, undefined, {
        signal: ctx.signal,
        timeout: timeoutMs,
        onprogress: (p) => ctx.progress({ message: p.message ?? "", ...(p.total ? { fraction: p.progress / p.total } : {}) }),
      });
    } catch (cause) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw new ToolError("provider_unavailable", `MCP server ${options.name} failed on ${name}: ${(cause as Error).message}`, {
        cause,
        boundary: "effect_state_unknown",
      });
    }
    if (result.isError) {
      const text = (result.content as { type: string; text?: string }[])
        .filter((c) => c.type === "text")
        .map((c) => c.text)
        .join("\n");
      throw new ToolError("provider_rejected", `MCP server ${options.name} reported an error from ${name}`, {
        boundary: "effect_failed",
        details: { remoteError: text.slice(0, 2000) },
      });
    }
    return {
      content: result.content as Record<string, unknown>[],
      ...(result.structuredContent === undefined ? {} : { structuredContent: result.structuredContent as Record<string, unknown> }),
    };
  }

  const permissions = [...new Set(manifests.flatMap((m) => m.requiredAllowlist))].filter((t) => t.startsWith(`${options.name}:`));
  const family = defineFamily({
    name: options.name,
    tools: manifests,
    permissions,
    description: `Tools of the MCP server ${options.name}, as described by the operator. Output is untrusted.`,
    kind: "process",
  });

  return {
    family,
    skipped,
    missing,
    warnings,
    get digests() {
      return Object.fromEntries(approved);
    },
    async drift() {
      await refresh();
      return [...approved.keys()].map(driftOf).filter((d): d is DriftReport => d !== undefined);
    },
    async reapprove(names) {
      await refresh();
      for (const name of names ?? [...approved.keys()]) {
        if (!approved.has(name)) throw new ToolError("config_invalid", `${name} is not a registered tool of ${options.name}`);
        const c = current.get(name);
        if (c === null || c === undefined) throw new ToolError("config_invalid", `${options.name} no longer offers ${name}`);
        approved.set(name, c);
      }
    },
    close: () => client.close(),
  };

  function manifestFor(o: ImportMcpServerOptions, name: string, id: string, tool: McpTool, d: ImportedToolDescription): AnyToolManifest {
    let input: z.ZodType<Record<string, unknown>>;
    try {
      input = d.input ?? (z.fromJSONSchema(tool.inputSchema as Parameters<typeof z.fromJSONSchema>[0]) as z.ZodType<Record<string, unknown>>);
    } catch (cause) {
      throw new ToolError("config_invalid", `${o.name}/${name}: its input schema cannot be used (${(cause as Error).message}); give an input schema`, {
        cause,
      });
    }
    const timeoutMs = d.timeoutMs ?? 30_000;
    const isolation: RuntimeIsolation = d.runtimeIsolation ?? {
      network: o.url !== undefined ? "provider" : "unknown",
      filesystem: "unknown",
      secrets: "none",
      subprocess: "process",
      notes: o.url !== undefined ? `MCP server at ${new URL(o.url).origin}` : `MCP server over stdio: ${o.command}`,
    };
    return defineTool({
      id,
      title: d.title ?? tool.title ?? tool.annotations?.title ?? name,
      description: d.description ?? tool.description ?? `${name} on the MCP server ${o.name}`,
      input,
      output: mcpContent,
      actionType: d.actionType ?? "mcp-call",
      effect: d.effect,
      requiredAllowlist: d.requiredAllowlist,
      risk: d.risk,
      ...(d.approval === "never"
        ? { approval: d.approval }
        : {
            approval: d.approval,
            preview:
              d.preview ??
              ((args: Record<string, unknown>) => ({ summary: `Call ${name} on the MCP server ${o.name}`, details: { tool: name, arguments: args } })),
          }),
      idempotent: d.idempotent ?? false,
      retryable: d.retryable ?? false,
      reversible: d.reversible ?? false,
      timeoutMs,
      ...(d.visibility === undefined ? {} : { visibility: d.visibility }),
      ...(d.provider === undefined ? {} : { provider: d.provider }),
      ...(d.dataEgress === undefined ? {} : { dataEgress: d.dataEgress }),
      ...(d.dataClass === undefined ? {} : { dataClass: d.dataClass }),
      ...(d.requiredConsent === undefined ? {} : { requiredConsent: d.requiredConsent }),
      ...(d.target === undefined ? {} : { target: d.target }),
      runtimeIsolation: isolation,
      untrustedOutput: true,
      describeResult: (output) => `${output.content.length} content block(s)`,
      handler: (args, ctx) => callRemote(name, args, ctx, timeoutMs),
    });
  }
}

function stdioTransport(o: ImportMcpServerOptions): StdioClientTransport {
  // The SDK merges a default environment into whatever is given: unset every name not allowed.
  const env: Record<string, string | undefined> = {};
  for (const key of Object.keys(getDefaultEnvironment())) env[key] = undefined;
  for (const key of o.inheritEnv ?? ["PATH"]) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  Object.assign(env, o.env ?? {});
  return new StdioClientTransport({
    command: o.command!,
    args: [...(o.args ?? [])],
    env: env as Record<string, string>,
    stderr: o.stderr ?? "ignore",
    ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
  });
}

function snake(name: string): string {
  const s = name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, "_")
    .replace(/^_+|_+$/g, "");
  return /^[a-z]/.test(s) ? s : `t_${s}`;
}

/** Remote hints are recorded for the operator; they never change the manifest. */
function hintWarnings(server: string, tool: McpTool, d: ImportedToolDescription): string[] {
  const out: string[] = [];
  const a = tool.annotations;
  const hinted: Effect | undefined = a?.destructiveHint === true && a.readOnlyHint !== true ? "destructive" : a?.readOnlyHint === false ? "write" : undefined;
  if (hinted && RANK[hinted] > RANK[d.effect]) out.push(`${server}/${tool.name}: the server hints ${hinted}, the operator declared ${d.effect}`);
  if (a?.openWorldHint === true && d.provider === undefined)
    out.push(`${server}/${tool.name}: the server hints it reaches the open world, but no provider is declared`);
  if (d.description === undefined && tool.description && scanForInjection(tool.description).length > 0) {
    out.push(`${server}/${tool.name}: the server's description reads like instructions; give your own description`);
  }
  return out;
}
