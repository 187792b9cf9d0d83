/**
 * What `toolgate console` takes from the composition file: the port (default 7878) and the
 * approval webhook with its signing secret, read from its file (0600) or environment variable.
 */
import { existsSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { ToolError } from "@toolgate/core";
import type { ToolgateConfig } from "./config.js";
import type { Runtime } from "./runtime.js";

/** The console's default port; `operators add` prints login links for it unless told another. */
export const DEFAULT_CONSOLE_PORT = 7878;

export interface ConsoleSettings {
  readonly port: number;
  /** Where new approval requests are posted, and the HMAC-SHA256 secret that signs each body. */
  readonly webhook?: { readonly url: string; readonly secret: string };
}

/** The webhook secret's file, when the configuration keeps it in one (protected like the state). */
export function webhookSecretFile(baseDir: string, config: ToolgateConfig): string | undefined {
  const secret = config.console?.webhook?.secret;
  return secret && "file" in secret ? resolve(baseDir, secret.file) : undefined;
}

/** The console's settings. The secret only signs webhook bodies: never print it. */
export async function consoleSettings(runtime: Pick<Runtime, "baseDir" | "config">): Promise<ConsoleSettings> {
  const configured = runtime.config.console;
  const port = configured?.port ?? DEFAULT_CONSOLE_PORT;
  const webhook = configured?.webhook;
  if (!webhook) return { port };
  const hint = "set console.webhook.secret to { file } (0600) or { env } with at least 32 characters";
  let secret: string;
  if ("env" in webhook.secret) {
    secret = process.env[webhook.secret.env] ?? "";
    if (secret === "") throw new ToolError("config_invalid", `the webhook secret variable ${webhook.secret.env} is not set`, { details: { hint } });
  } else {
    const path = webhookSecretFile(runtime.baseDir, runtime.config)!;
    if (!existsSync(path)) throw new ToolError("config_invalid", `the webhook secret file ${path} does not exist`, { details: { hint } });
    if ((statSync(path).mode & 0o077) !== 0)
      throw new ToolError("config_invalid", `the webhook secret file ${path} is readable by others`, { details: { hint: `chmod 600 ${path}` } });
    secret = (await readFile(path, "utf8")).trim();
  }
  if (secret.length < 32) throw new ToolError("config_invalid", "the webhook secret is shorter than 32 characters", { details: { hint } });
  return { port, webhook: { url: webhook.url, secret } };
}
