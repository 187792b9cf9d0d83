import { ToolError, type AnyToolManifest, type Gate, type Profile } from "@toolgate/core";
import type { McpClient } from "@toolgate/core/operator";
import { serveMcp, type McpServerHandle, type McpServerOptions } from "./server.js";

/** What `toolgate serve-mcp` passes after building the gate from config. */
export interface ServeMcpCommandOptions<TTool extends AnyToolManifest = AnyToolManifest> {
  readonly gate: Gate<TTool>;
  /** Every profile the configuration defines; `profile` (or a client's record) picks one by name. */
  readonly profiles: readonly Profile[];
  /** Over stdio without `client`: the profile the calls run under. */
  readonly profile?: string;
  readonly principal?: string;
  readonly tenant?: string;
  /**
   * Over stdio: a registered MCP client (name or id) whose record gives the profile, principal and
   * tenant, and whose `elicitation` flag lets the human behind it approve in band.
   */
  readonly client?: string;
  /** Serve Streamable HTTP on 127.0.0.1 at this port (0: any free port) instead of stdio; every client then needs its token. */
  readonly httpPort?: number;
  /** Where status lines go; never stdout, which carries the protocol under stdio. Default stderr. */
  readonly log?: (line: string) => void;
  /** How often (ms) each session looks for a change in its served tools; default 5000, 0 never (see `McpServerOptions.toolsPollMs`). */
  readonly toolsPollMs?: number;
  /** Imported MCP servers among the gate's families: their tools not approved now are not listed (see `McpServerOptions.imported`). */
  readonly imported?: McpServerOptions["imported"];
  /** Provenance per connection (default on, no trusted text; see `McpServerOptions.provenance`). */
  readonly provenance?: McpServerOptions["provenance"];
  /** Stop on SIGINT and SIGTERM; default true. */
  readonly handleSignals?: boolean;
}

/**
 * The body of `toolgate serve-mcp`: resolve the profile by name, serve, and stop cleanly on a
 * signal. Over HTTP there is no single identity: each client authenticates with the token
 * `toolgate mcp-clients add` printed, and runs as its record says (no flag turns that off).
 * Throws `profile_invalid` for an unknown profile name, `config_invalid` for flags that do not fit
 * the transport or an unknown client.
 */
export async function serveMcpCommand<TTool extends AnyToolManifest>(options: ServeMcpCommandOptions<TTool>): Promise<McpServerHandle> {
  const gate = options.gate as unknown as Gate;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  let handle: McpServerHandle;
  const watch = {
    ...(options.toolsPollMs === undefined ? {} : { toolsPollMs: options.toolsPollMs }),
    ...(options.imported === undefined ? {} : { imported: options.imported }),
    ...(options.provenance === undefined ? {} : { provenance: options.provenance }),
  };
  if (options.httpPort !== undefined) {
    if (options.client !== undefined || options.profile !== undefined || options.principal !== undefined || options.tenant !== undefined) {
      throw new ToolError(
        "config_invalid",
        "over HTTP each client authenticates with its own token and runs under its record's profile, principal and tenant: drop --client, --profile, --principal and --tenant",
      );
    }
    handle = await serveMcp(gate, { profiles: options.profiles, ...watch, transport: { type: "http", port: options.httpPort } });
    log(`toolgate: serving MCP at ${handle.url?.href}; each client sends Authorization: Bearer <token> (toolgate mcp-clients add NAME --profile P)`);
  } else {
    const client = options.client === undefined ? undefined : await registeredClient(gate, options.client);
    if (client && (options.profile !== undefined || options.principal !== undefined || options.tenant !== undefined)) {
      throw new ToolError(
        "config_invalid",
        `client ${client.name} runs under its record's profile, principal and tenant: drop --profile, --principal and --tenant`,
      );
    }
    const profileName = client ? client.profile : options.profile;
    if (profileName === undefined) throw new ToolError("config_invalid", "over stdio, name the profile (--profile P) or a registered client (--client NAME)");
    const profile = options.profiles.find((p) => p.name === profileName);
    if (!profile) {
      throw new ToolError(
        "profile_invalid",
        `no profile named ${JSON.stringify(profileName)}; known: ${options.profiles.map((p) => p.name).join(", ") || "none"}`,
      );
    }
    const identity = client
      ? { principal: client.principal, tenant: client.tenant, client }
      : { principal: options.principal ?? "mcp-client", tenant: options.tenant ?? "default" };
    handle = await serveMcp(gate, { profile, ...identity, ...watch, transport: "stdio" });
    log(
      `toolgate: serving MCP for profile ${profile.name} on stdio${client ? ` as client ${client.name}${client.elicitation ? " (approval by elicitation on)" : ""}` : ""}`,
    );
  }
  if (options.handleSignals ?? true) {
    const stop = () => {
      void handle.close().finally(() => process.exit(0));
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  }
  return handle;
}

/** The active registered client named (or with the id) `name`. */
export async function registeredClient(gate: Gate, name: string): Promise<McpClient> {
  const found = (await gate.authority.clients.list()).find((c) => (c.name === name || c.id === name) && c.status === "active");
  if (!found)
    throw new ToolError("config_invalid", `no active MCP client named ${JSON.stringify(name)}; add one with toolgate mcp-clients add NAME --profile P`);
  return found;
}
