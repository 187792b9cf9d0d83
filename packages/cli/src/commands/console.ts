/**
 * `toolgate console [--port N]`: the operator console on 127.0.0.1 over the configured journal,
 * until a signal. Prints its address on stdout; operators sign in with the one-time link
 * `toolgate operators add|login` prints.
 */
import type { Command } from "commander";
import { buildInventory } from "@toolgate/core/operator";
import { consoleSettings } from "../console-config.js";
import { CliFailure, EXIT, type Io } from "../output.js";
import type { WithRuntime } from "../program.js";
import type { Runtime } from "../runtime.js";

export async function consoleCommand(runtime: Runtime, options: { port?: string }, io: Io): Promise<number> {
  const settings = await consoleSettings(runtime);
  const port = options.port === undefined ? settings.port : Number(options.port);
  if (!/^\d{1,5}$/.test(options.port ?? "0") || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new CliFailure(`--port must be a whole number from 0 to 65535, not ${JSON.stringify(options.port)}`, EXIT.usage);
  const inventory = buildInventory(runtime.registry, { profiles: runtime.profiles });
  const { startConsole } = await import("@toolgate/console");
  const running = await startConsole({
    gate: runtime.gate,
    port,
    inventory,
    ...(settings.webhook ? { webhook: { ...settings.webhook, onFailure: (id, why) => io.err(`toolgate console: webhook for ${id} failed: ${why}`) } } : {}),
    log: (line) => io.err(line),
  });
  io.out(`toolgate console: ${running.url}/ (journal ${runtime.journal.kind}; sign in with a link from toolgate operators login NAME; Ctrl-C stops)`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await running.close();
  return EXIT.ok;
}

/** Registers `toolgate console`. */
export function consoleCommands(program: Command, { withRuntime, io }: { withRuntime: WithRuntime; io: Io }): void {
  program
    .command("console")
    .description("serve the operator console on 127.0.0.1: approvals, inventory, audit, outbox, kill switch")
    .option("--port <n>", "the port (default: console.port in the config, else 7878; 0 picks a free one)")
    .action(withRuntime((rt, opts: { port?: string }) => consoleCommand(rt, opts, io)));
}
