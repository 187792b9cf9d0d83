import { CliFailure, EXIT, type Io } from "../output.js";
import type { Runtime } from "../runtime.js";

export interface ServeMcpCliOptions {
  readonly profile?: string;
  readonly principal?: string;
  readonly tenant?: string;
  readonly client?: string;
  readonly http?: string;
  readonly toolsPollMs?: string;
}

/** `--tools-poll-ms`: 0 (never) or a whole number of ms within these bounds. */
export const TOOLS_POLL_MS_FLAG = { min: 100, max: 3_600_000 } as const;

/**
 * Serve the gate as an MCP server until a signal: over stdio (the client's own process) as
 * `--profile` or a registered `--client` says, or Streamable HTTP on 127.0.0.1 where every client
 * authenticates with its own token (`toolgate mcp-clients add`); there is no flag to turn that off.
 */
export async function serveMcp(runtime: Runtime, options: ServeMcpCliOptions, io: Io): Promise<number> {
  const { serveMcpCommand } = await import("@toolgate/adapters/mcp");
  const http = options.http === undefined ? undefined : parsePort(options.http);
  const toolsPollMs = options.toolsPollMs === undefined ? undefined : parsePollMs(options.toolsPollMs);
  if (
    http !== undefined &&
    (options.profile !== undefined || options.client !== undefined || options.principal !== undefined || options.tenant !== undefined)
  ) {
    throw new CliFailure(
      "over HTTP each client runs under its own record's profile, principal and tenant: drop --profile, --client, --principal and --tenant",
      EXIT.usage,
      "toolgate mcp-clients add NAME --profile P prints a client's token; the client sends Authorization: Bearer <token>",
    );
  }
  if (
    http === undefined &&
    options.client !== undefined &&
    (options.profile !== undefined || options.principal !== undefined || options.tenant !== undefined)
  ) {
    throw new CliFailure(
      `--client ${options.client} runs under its record's profile, principal and tenant: drop --profile, --principal and --tenant`,
      EXIT.usage,
    );
  }
  if (http === undefined && options.client === undefined && options.profile === undefined) {
    throw new CliFailure(
      "serve-mcp over stdio needs --profile P or --client NAME",
      EXIT.usage,
      "over HTTP (--http PORT) each client's token names its profile",
    );
  }
  // An unknown profile or client is a bad argument (exit 2), as in every other command.
  if (http === undefined && options.client === undefined) runtime.profile(options.profile as string);
  if (http === undefined && options.client !== undefined) {
    const active = (await runtime.gate.authority.clients.list()).filter((c) => c.status === "active");
    if (!active.some((c) => c.name === options.client))
      throw new CliFailure(
        `no active MCP client named ${JSON.stringify(options.client)}`,
        EXIT.usage,
        `toolgate mcp-clients list shows them; add one with toolgate mcp-clients add NAME --profile P`,
      );
  }
  const handle = await serveMcpCommand({
    gate: runtime.gate,
    profiles: runtime.profiles,
    ...(http === undefined
      ? options.client === undefined
        ? {
            profile: options.profile as string,
            principal: options.principal ?? runtime.config.principal ?? "mcp-client",
            tenant: options.tenant ?? runtime.config.tenant ?? "default",
          }
        : { client: options.client }
      : { httpPort: http }),
    ...(toolsPollMs === undefined ? {} : { toolsPollMs }),
    // One provenance session per connection, with the texts the configuration vouches for (a tenant's own only for its connections).
    provenance: {
      trusted: (connection) =>
        (runtime.config.trusted ?? [])
          .filter((t) => t.tenant === undefined || t.tenant === connection.tenant)
          .map(({ text, label }) => (label === undefined ? { text } : { text, label })),
    },
    log: (line) => io.err(line),
    handleSignals: false,
  });
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    if (handle.transport === "stdio") process.stdin.once("end", stop);
  });
  await handle.close();
  return EXIT.ok;
}

function parsePort(text: string): number {
  const port = Number(text);
  if (/^\d+$/.test(text) && port >= 0 && port <= 65535) return port;
  throw new CliFailure(`--http must be a port number (0-65535; 0 picks a free one), not ${JSON.stringify(text)}`, EXIT.usage);
}

function parsePollMs(text: string): number {
  const { min, max } = TOOLS_POLL_MS_FLAG;
  const ms = Number(text);
  if (/^\d{1,7}$/.test(text) && (ms === 0 || (ms >= min && ms <= max))) return ms;
  throw new CliFailure(`--tools-poll-ms must be 0 (never) or a whole number of ms from ${min} to ${max}, not ${JSON.stringify(text)}`, EXIT.usage);
}
