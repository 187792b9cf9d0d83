import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { ToolError } from "@toolgate/core";
import { createConsoleApp, type ConsoleApp, type ConsoleBinding } from "./app.js";
import type { ConsoleOptions } from "./types.js";

export interface StartConsoleOptions extends Omit<ConsoleOptions, "port" | "baseUrl"> {
  /** Only loopback: 127.0.0.1 (the default) or localhost. */
  readonly host?: "127.0.0.1" | "localhost";
  /** 0 (the default) picks a free port. */
  readonly port?: number;
}

export interface RunningConsole {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  readonly app: ConsoleApp;
  close(): Promise<void>;
}

/** Serve the console on this machine only (127.0.0.1) until `close()`. */
export async function startConsole(options: StartConsoleOptions): Promise<RunningConsole> {
  const host = options.host ?? "127.0.0.1";
  if (host !== "127.0.0.1" && host !== "localhost") throw new ToolError("config_invalid", "the console listens on 127.0.0.1 only");
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ToolError("config_invalid", "the console's port must be a whole number from 0 to 65535");
  const binding: ConsoleBinding = {};
  const app = createConsoleApp(options, binding);
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port }, () => resolve(s));
    s.once("error", (error) => reject(error));
  }).catch(async (error: NodeJS.ErrnoException) => {
    await app.close();
    throw new ToolError("config_invalid", `the console could not listen on 127.0.0.1:${port}: ${error.code ?? error.message}`);
  });
  const bound = (server.address() as AddressInfo).port;
  binding.port = bound;
  binding.baseUrl = `http://127.0.0.1:${bound}`;
  return {
    url: binding.baseUrl,
    port: bound,
    app,
    async close() {
      await app.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    },
  };
}
