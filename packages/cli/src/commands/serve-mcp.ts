import { EXIT, type Io } from "../output.js";
import type { Runtime } from "../runtime.js";

/** Serve the gate as an MCP server (stdio, or Streamable HTTP on 127.0.0.1) until a signal. */
export async function serveMcp(runtime: Runtime, options: { profile: string; principal?: string; tenant?: string; http?: string }, io: Io): Promise<number> {
  const { serveMcpCommand } = await import("@toolgate/adapters/mcp");
  const handle = await serveMcpCommand({
    gate: runtime.gate,
    profiles: runtime.profiles,
    profile: options.profile,
    principal: options.principal ?? runtime.config.principal ?? "mcp-client",
    tenant: options.tenant ?? runtime.config.tenant ?? "default",
    ...(options.http === undefined ? {} : { httpPort: Number.parseInt(options.http, 10) }),
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
