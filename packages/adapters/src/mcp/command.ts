import { ToolError, type AnyToolManifest, type Gate, type Profile } from "@toolgate/core";
import { serveMcp, type McpServerHandle } from "./server.js";

/** What `toolgate serve-mcp --profile P [--http PORT]` passes after building the gate from config. */
export interface ServeMcpCommandOptions<TTool extends AnyToolManifest = AnyToolManifest> {
  readonly gate: Gate<TTool>;
  /** Every profile the configuration defines; `profile` picks one by name. */
  readonly profiles: readonly Profile[];
  readonly profile: string;
  readonly principal: string;
  readonly tenant: string;
  /** Serve Streamable HTTP on 127.0.0.1 at this port (0: any free port) instead of stdio. */
  readonly httpPort?: number;
  /** Where status lines go; never stdout, which carries the protocol under stdio. Default stderr. */
  readonly log?: (line: string) => void;
  /** Stop on SIGINT and SIGTERM; default true. */
  readonly handleSignals?: boolean;
}

/**
 * The body of `toolgate serve-mcp`: resolve the profile by name, serve, and stop cleanly on a
 * signal. Throws `profile_invalid` for an unknown profile name, listing the known ones.
 */
export async function serveMcpCommand<TTool extends AnyToolManifest>(options: ServeMcpCommandOptions<TTool>): Promise<McpServerHandle> {
  const profile = options.profiles.find((p) => p.name === options.profile);
  if (!profile) {
    throw new ToolError(
      "profile_invalid",
      `no profile named ${JSON.stringify(options.profile)}; known: ${options.profiles.map((p) => p.name).join(", ") || "none"}`,
    );
  }
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const handle = await serveMcp(options.gate, {
    profile,
    principal: options.principal,
    tenant: options.tenant,
    transport: options.httpPort === undefined ? "stdio" : { type: "http", port: options.httpPort },
  });
  log(handle.url ? `toolgate: serving MCP for profile ${profile.name} at ${handle.url.href}` : `toolgate: serving MCP for profile ${profile.name} on stdio`);
  if (options.handleSignals ?? true) {
    const stop = () => {
      void handle.close().finally(() => process.exit(0));
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  }
  return handle;
}
