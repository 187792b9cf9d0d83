/**
 * `toolgate mcp-clients`: the MCP clients that may call the gate over HTTP (`toolgate serve-mcp
 * --http`), each with its own bearer token, profile, principal and tenant, kept in the journal.
 * The CLI acts as the owner. A token is printed once; only its hash is stored.
 */
import { ToolError } from "@toolgate/core";
import type { McpClient } from "@toolgate/core/operator";
import type { Command } from "commander";
import { CliFailure, EXIT, table, type Io } from "../output.js";
import type { WithRuntime } from "../program.js";
import type { Runtime } from "../runtime.js";

export interface McpClientsAddOptions {
  readonly profile: string;
  readonly principal?: string;
  readonly tenant?: string;
  readonly elicitation?: boolean;
}

export async function mcpClientsAdd(runtime: Runtime, name: string, options: McpClientsAddOptions, io: Io): Promise<number> {
  if (!runtime.profiles.some((p) => p.name === options.profile)) {
    throw new CliFailure(
      `no profile named ${JSON.stringify(options.profile)}`,
      EXIT.usage,
      `known: ${runtime.profiles.map((p) => p.name).join(", ") || "none"}; the client's calls run under this profile`,
    );
  }
  const authority = runtime.gate.authority;
  const added = await authority.clients
    .add(
      name,
      {
        profile: options.profile,
        ...(options.principal === undefined ? {} : { principal: options.principal }),
        ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
        ...(options.elicitation ? { elicitation: true } : {}),
      },
      authority.owner(),
    )
    .catch((error: unknown) => {
      throw ToolError.is(error, "conflict")
        ? new CliFailure(`an MCP client named ${name} exists`, EXIT.failed, `toolgate mcp-clients remove ${name} first`)
        : error;
    });
  const c = added.client;
  io.out(
    [
      `added MCP client ${c.name} (${c.id}): profile ${c.profile}, principal ${c.principal}, tenant ${c.tenant}${c.elicitation ? ", approval by elicitation ON" : ""}`,
      `token ${added.token}`,
      "shown once; only its hash is kept. The client sends it on every request: Authorization: Bearer <token>",
      c.elicitation
        ? `elicitation: serve it over stdio with toolgate serve-mcp --client ${c.name}; the person at that client approves in band, recorded as mcp:${c.id}`
        : "calls that need approval wait for an operator (toolgate approvals approve, or the console); the client's retry then runs once",
    ].join("\n"),
  );
  return EXIT.ok;
}

export async function mcpClientsList(runtime: Runtime, options: { json: boolean; all?: boolean }, io: Io): Promise<number> {
  const clients = (await runtime.gate.authority.clients.list()).filter((c) => options.all || c.status === "active");
  if (options.json) io.out(JSON.stringify(clients, null, 2));
  else if (clients.length === 0) io.out("no MCP clients; add one with toolgate mcp-clients add NAME --profile P");
  else io.out(table(["name", "id", "profile", "principal", "tenant", "elicitation", "status", "added"], clients.map(row)));
  return EXIT.ok;
}

export async function mcpClientsRemove(runtime: Runtime, name: string, io: Io): Promise<number> {
  const authority = runtime.gate.authority;
  const removed = await authority.clients.remove(name, authority.owner()).catch((error: unknown) => {
    throw ToolError.is(error, "operator_unknown") ? new CliFailure(`no MCP client named ${name}`, EXIT.failed, "toolgate mcp-clients list shows them") : error;
  });
  io.out(`removed MCP client ${removed.name} (${removed.id}); its token stops working on its next request`);
  return EXIT.ok;
}

function row(c: McpClient): string[] {
  return [c.name, c.id, c.profile, c.principal, c.tenant, c.elicitation ? "on" : "off", c.status, c.createdAt];
}

/** Registers `toolgate mcp-clients add|list|remove`. */
export function mcpClientsCommands(program: Command, { withRuntime, io }: { withRuntime: WithRuntime; io: Io }): void {
  const clients = program.command("mcp-clients").description("MCP clients allowed to call over HTTP: each its own token, profile, principal and tenant");
  clients
    .command("add")
    .description("register a client and print its bearer token once")
    .argument("<name>", "the client's name")
    .requiredOption("--profile <name>", "the profile its calls run under")
    .option("--principal <id>", "who its calls are made as (default mcp:<name>)")
    .option("--tenant <id>", "its tenant")
    .option("--elicitation", "the client is a human interface: let the person at it approve its calls in band (stdio, serve-mcp --client NAME)", false)
    .action(withRuntime((rt, name: string, opts: McpClientsAddOptions) => mcpClientsAdd(rt, name, opts, io)));
  clients
    .command("list")
    .option("--all", "removed ones too", false)
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, opts: { json: boolean; all: boolean }) => mcpClientsList(rt, opts, io)));
  clients
    .command("remove")
    .argument("<name>", "name or id")
    .action(withRuntime((rt, name: string) => mcpClientsRemove(rt, name, io)));
}
