import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import {
  canonicalJson,
  defineFamily,
  defineTool,
  scanForInjection,
  sha256Hex,
  ToolError,
  type AnyToolManifest,
  type Effect,
  type RuntimeIsolation,
} from "@toolgate/core";
import { z } from "zod";
import { callFailure, createRemoteConnection, limitFailure, listFailure } from "./remote-connection.js";
import { capOutput, DEFAULT_MAX_OUTPUT_BYTES, fencedRemoteText, remoteProgressText, type TextRedactor } from "./remote-output.js";
import { stdioLaunch } from "./remote-sandbox.js";

export type { DriftReport, ImportedMcpServer, ImportedToolDescription, ImportMcpServerOptions, SkippedTool } from "./import-options.js";
import type { DriftReport, ImportedMcpServer, ImportedToolDescription, ImportMcpServerOptions, SkippedTool } from "./import-options.js";

/**
 * What `digests` holds for a tool whose approval the operator revoked (`revoke`): no definition has
 * this digest, so passed back as `approvedDigests` the tool stays refused until re-approved.
 */
export const REVOKED_APPROVAL = "revoked";

export function definitionDigest(tool: Pick<McpTool, "name" | "description" | "inputSchema">): string {
  return sha256Hex(canonicalJson({ name: tool.name, description: tool.description ?? null, inputSchema: tool.inputSchema }));
}

/** The digest an operator accepts a server's tool text by: everything of it a model reads (title, description, input schema). */
export function descriptionDigest(tool: Pick<McpTool, "name" | "title" | "description" | "inputSchema" | "annotations">): string {
  return sha256Hex(
    canonicalJson({
      name: tool.name,
      title: tool.title ?? null,
      annotationTitle: tool.annotations?.title ?? null,
      description: tool.description ?? null,
      inputSchema: tool.inputSchema,
    }),
  );
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
  const launch = options.command === undefined ? undefined : stdioLaunch(options);
  let listedGeneration = 0;
  const connection = createRemoteConnection(options, launch, () => {
    void refresh().catch(() => undefined);
  });
  const listAll = async (): Promise<Map<string, McpTool>> => {
    const live = await connection.current();
    listedGeneration = live.generation;
    try {
      return await listTools(live.client);
    } catch (cause) {
      const hit = live.limitHit();
      if (hit !== undefined) throw limitFailure(options.name, "while listing its tools", hit, "effect_not_started", cause);
      throw cause;
    }
  };

  let remote: Map<string, McpTool>;
  try {
    remote = await listAll();
  } catch (cause) {
    await connection.close().catch(() => undefined);
    // A server that cannot start within its sandbox's limits: the operator must raise them.
    if (cause instanceof ToolError && cause.code === "limit_exceeded") throw cause;
    // The server's own words (an error it sent) are not repeated to the operator's log unfenced.
    throw new ToolError("provider_unavailable", `MCP server ${options.name} could not be reached or did not list its tools`, { cause });
  }

  const approved = new Map<string, string>();
  const current = new Map<string, string | null>();
  const skipped: SkippedTool[] = [];
  const missing: string[] = [];
  const warnings: string[] = [];
  if (launch?.warning !== undefined) {
    warnings.push(launch.warning);
    // Said at start-up too, where an operator sees it even if nobody reads `warnings`.
    process.emitWarning(launch.warning, { code: "TOOLGATE_MCP_UNSANDBOXED" });
  }
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
    const refused = instructionsRefusal(options, tool, described);
    if (refused) {
      skipped.push(refused);
      warnings.push(`${options.name}/${name}: ${refused.reason}`);
      continue;
    }
    const digest = definitionDigest(tool);
    approved.set(name, options.approvedDigests?.[name] ?? digest);
    current.set(name, digest);
    warnings.push(...hintWarnings(options.name, tool, described));
    const id = described.id ?? `${options.name}.${snake(name)}`;
    idOf.set(name, id);
    try {
      manifests.push(manifestFor(options, name, id, tool, described));
    } catch (error) {
      await connection.close().catch(() => undefined); // An import that fails leaves no server running.
      throw error;
    }
  }
  if (manifests.length === 0) {
    await connection.close().catch(() => undefined);
    throw new ToolError(
      "config_invalid",
      `MCP server ${options.name}: none of the described tools (${Object.keys(options.tools).join(", ") || "none"}) is offered and accepted`,
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
  const driftOf = (name: string): DriftReport | undefined => {
    const a = approved.get(name)!;
    const c = current.get(name) ?? null;
    return a === c ? undefined : { name, id: idOf.get(name)!, approved: a, current: c };
  };

  async function callRemote(
    name: string,
    id: string,
    input: Record<string, unknown>,
    ctx: { signal: AbortSignal; progress(e: { message: string; fraction?: number }): void; redactText(text: string): string },
    timeoutMs: number,
    maxOutputBytes: number,
  ) {
    // The gate's redactor, through the call's context: text is redacted before any cut below.
    const redactor: TextRedactor = { redactText: (text) => ctx.redactText(text) };
    let live;
    try {
      live = await connection.current();
      // A server started again is listed again, whatever the drift check: its tools may have changed.
      if ((options.driftCheck ?? "every-call") === "every-call" || live.generation !== listedGeneration) await refresh();
    } catch (cause) {
      throw listFailure(options.name, live, cause);
    }
    const drift = driftOf(name);
    if (drift?.approved === REVOKED_APPROVAL) {
      throw new ToolError("provider_rejected", `${options.name}/${name}: the operator revoked its approval; calls are refused until re-approved`, {
        boundary: "effect_not_started",
        details: { drift: false, revoked: true, name, id },
      });
    }
    if (drift) {
      throw new ToolError(
        "provider_rejected",
        `tool definition drift: ${options.name}/${name} changed since it was approved; calls are refused until the operator re-approves`,
        { boundary: "effect_not_started", details: { drift: true, ...drift } },
      );
    }
    let result;
    try {
      result = await live.client.callTool({ name, arguments: input }, undefined, {
        signal: ctx.signal,
        timeout: timeoutMs,
        onprogress: (p) =>
          ctx.progress({
            message: remoteProgressText(p.message, redactor),
            ...(p.total ? { fraction: Math.min(1, Math.max(0, p.progress / p.total || 0)) } : {}),
          }),
      });
    } catch (cause) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw callFailure(options.name, name, id, live, cause, redactor);
    }
    if (result.isError) {
      const text = (Array.isArray(result.content) ? (result.content as { type?: unknown; text?: unknown }[]) : [])
        .filter((c) => c?.type === "text" && typeof c.text === "string")
        .map((c) => c.text as string)
        .join("\n");
      throw new ToolError("provider_rejected", `MCP server ${options.name} reported an error from ${name}`, {
        boundary: "effect_failed",
        details: fencedRemoteText(id, text, redactor),
      });
    }
    return capOutput(
      {
        content: result.content as Record<string, unknown>[],
        ...(result.structuredContent === undefined ? {} : { structuredContent: result.structuredContent as Record<string, unknown> }),
      },
      maxOutputBytes,
      redactor,
    );
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
      const chosen = registered(names);
      await refresh();
      const gone = chosen.find((name) => (current.get(name) ?? null) === null);
      if (gone !== undefined) throw new ToolError("config_invalid", `${options.name} no longer offers ${gone}`);
      for (const name of chosen) approved.set(name, current.get(name)!);
    },
    async revoke(names) {
      for (const name of registered(names)) approved.set(name, REVOKED_APPROVAL);
    },
    unapproved: () => [...approved.keys()].filter((name) => driftOf(name) !== undefined).map((name) => idOf.get(name)!),
    isolation: launch?.isolation,
    close: () => connection.close(),
  };

  /** The names given (default all registered), each a registered tool: all or nothing is changed. */
  function registered(names: readonly string[] | undefined): readonly string[] {
    const chosen = names ?? [...approved.keys()];
    const unknown = chosen.find((name) => typeof name !== "string" || !approved.has(name));
    if (unknown !== undefined) throw new ToolError("config_invalid", `${String(unknown)} is not a registered tool of ${options.name}`);
    return chosen;
  }

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
    const maxOutputBytes = positive(d.maxOutputBytes ?? o.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, `${o.name}/${name}: maxOutputBytes`);
    const isolation: RuntimeIsolation = d.runtimeIsolation ??
      launch?.isolation ?? {
        network: "provider",
        filesystem: "unknown",
        secrets: "none",
        subprocess: "process",
        notes: `MCP server at ${new URL(o.url!).origin}`,
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
      // The server's input schema is someone else's: an approver approves or denies its calls as asked, never edits them.
      edits: false,
      untrustedOutput: true,
      describeResult: (output) => `${output.content.length} content block(s)`,
      handler: (args, ctx) => callRemote(name, id, args, ctx, timeoutMs, maxOutputBytes),
    });
  }
}

function snake(name: string): string {
  const s = name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, "_")
    .replace(/^_+|_+$/g, "");
  return /^[a-z]/.test(s) ? s : `t_${s}`;
}

/** Most pages of `tools/list` read: a server that always answers with another cursor is not followed for ever. */
export const MAX_TOOL_PAGES = 100;

async function listTools(client: Client): Promise<Map<string, McpTool>> {
  const found = new Map<string, McpTool>();
  let cursor: string | undefined;
  let pages = 0;
  do {
    if (++pages > MAX_TOOL_PAGES) throw new ToolError("protocol_error", `the server's tools/list went on past ${MAX_TOOL_PAGES} pages`);
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    for (const t of page.tools) found.set(t.name, t);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return found;
}

function positive(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 1024) throw new ToolError("config_invalid", `${what} must be a whole number of bytes, at least 1024`);
  return value;
}

/**
 * A tool whose server-written text the model would read (no operator description) and which reads
 * like instructions is refused until the operator accepts exactly that text by its digest.
 */
function instructionsRefusal(o: ImportMcpServerOptions, tool: McpTool, d: ImportedToolDescription): SkippedTool | undefined {
  const read = {
    ...(d.title === undefined ? { title: tool.title ?? null, annotationTitle: tool.annotations?.title ?? null } : {}),
    ...(d.description === undefined ? { description: tool.description ?? null } : {}),
    ...(d.input === undefined ? { inputSchema: tool.inputSchema } : {}),
  };
  const findings = scanForInjection(read);
  if (findings.length === 0) return undefined;
  const digest = descriptionDigest(tool);
  if (o.acceptedDescriptions?.[tool.name] === digest) return undefined;
  const rules = [...new Set(findings.map((f) => f.rule))].join(", ");
  return {
    name: tool.name,
    reason: `the server's text for this tool reads like instructions to the model (${rules}); not registered until the operator accepts it (acceptedDescriptions: { ${JSON.stringify(tool.name)}: "${digest}" }) or gives its own description`,
    digest: definitionDigest(tool),
    descriptionDigest: digest,
  };
}

/** Remote hints are recorded for the operator; they never change the manifest. */
function hintWarnings(server: string, tool: McpTool, d: ImportedToolDescription): string[] {
  const out: string[] = [];
  const a = tool.annotations;
  const hinted: Effect | undefined = a?.destructiveHint === true && a.readOnlyHint !== true ? "destructive" : a?.readOnlyHint === false ? "write" : undefined;
  if (hinted && RANK[hinted] > RANK[d.effect]) out.push(`${server}/${tool.name}: the server hints ${hinted}, the operator declared ${d.effect}`);
  if (a?.openWorldHint === true && d.provider === undefined)
    out.push(`${server}/${tool.name}: the server hints it reaches the open world, but no provider is declared`);
  return out;
}
