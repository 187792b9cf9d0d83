import { existsSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, extname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { ToolError, type ConnectorRuntime, type Journal, type ToolFamily, type Verifier, type Workspace } from "@toolgate/core";
import { type TokenVault, type VaultKeySource } from "@toolgate/core/connectors";
import { importFailure, jsonErrorLine, moduleErrorLine, syntaxFailure } from "./config-syntax.js";
import { checkProfiles, configProfileSchema, type ConfigProfile } from "./config-profiles.js";
import type { OAuthClientSetup } from "./commands/connect-setup.js";

/** What a composition file may hand the CLI for one run. */
export interface ComposeContext {
  /** The directory of the configuration file; relative paths resolve from here. */
  readonly baseDir: string;
  /** Secrets the composition learned (client secrets, keys): redacted everywhere. */
  readonly secrets: string[];
  /** The token vault named by the configuration, for a connector runtime; undefined without one. */
  readonly vault: TokenVault | undefined;
  /** The state directory (protected: no filesystem tool reaches it); for anything else of the gate's own a composition keeps. */
  readonly stateDir: string;
}

/** Everything the gate is built from. Returned by a composition file's `compose()`. */
export interface Composition {
  readonly families: readonly ToolFamily[];
  readonly connectors?: ConnectorRuntime;
  readonly verifier?: Verifier;
  readonly workspace?: Workspace;
  /** The OAuth clients `toolgate connections connect` signs in with (its secret is never printed). */
  readonly oauthClients?: readonly OAuthClientSetup[];
  /** Called when the CLI is done (stop processes, emulators, pools). */
  readonly close?: () => Promise<void> | void;
}

/**
 * Where the journal lives: a SQLite file, a PostgreSQL URL, or memory (gone when the CLI exits);
 * `witness`: a file outside the journal's directory for signed checkpoints of the audit chain;
 * `retainReadOutputs`: keep the outputs of reads, not only their hashes (default false).
 */
const common = { witness: z.string().min(1).optional(), retainReadOutputs: z.boolean().optional() };
const journalSchema = z.union(
  [
    z.object({ sqlite: z.string(), ...common }),
    z.object({
      postgres: z.string(),
      /** The schema holding the journal's tables (default `toolgate`): one database can hold several journals. */
      schema: z
        .string()
        .regex(/^[a-z_][a-z0-9_]{0,62}$/, { error: "schema must be a lower-case PostgreSQL name (letters, digits, _)" })
        .optional(),
      ...common,
    }),
    z.object({ memory: z.literal(true), ...common }),
  ],
  { error: 'must be { "sqlite": path }, { "postgres": url } or { "memory": true }' },
);

/** A key kept in a file or an environment variable. */
const keySourceSchema = z.union([z.object({ file: z.string() }), z.object({ env: z.string() })], { error: 'must be { "file": path } or { "env": name }' });

/** The token vault: an encrypted file (default `tokens.vault` in the state directory) and where its key comes from (never beside it). */
const vaultSchema = z.object({ file: z.string().optional(), key: keySourceSchema }, { error: 'must be { "file"?: path, "key": … }' });

/** A webhook URL: https, or http only to this machine (127.0.0.1, ::1, localhost); no credentials in it. */
export const webhookUrlSchema = z.string().refine(
  (text) => {
    if (!URL.canParse(text)) return false;
    const url = new URL(text);
    const loopback = ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname);
    return (url.protocol === "https:" || (url.protocol === "http:" && loopback)) && url.username === "" && url.password === "";
  },
  { error: "must be an https URL (http only to 127.0.0.1, [::1] or localhost) without credentials" },
);

/**
 * `toolgate console`: the port (default 7878) and a webhook told of each new approval request, its
 * body signed with HMAC-SHA256 under a secret kept in a file (0600, protected like the state) or
 * an environment variable, never in the composition file itself.
 */
export const consoleConfigSchema = z.strictObject(
  {
    port: z.number({ error: "port must be a whole number from 0 to 65535" }).int().min(0).max(65535).optional(),
    webhook: z
      .strictObject(
        { url: webhookUrlSchema, secret: keySourceSchema },
        { error: 'must be { "url": "https://…", "secret": { "file": path } or { "env": name } }' },
      )
      .optional(),
  },
  { error: 'must be { "port"?: number, "webhook"?: { "url", "secret" } }' },
);

/**
 * Texts the host vouches for in each provenance session `toolgate serve-mcp` opens (one per MCP
 * connection): the user's own standing instructions, operator-configured contacts and resources.
 * A destination (a recipient, an attendee, a page) found in one of them is trusted; one taken from
 * a tool's output, or new, is asked of a human (or refused, per the profile's `provenance`). A text
 * with a `tenant` is trusted only in that tenant's connections.
 */
export const trustedConfigSchema = z
  .array(
    z.strictObject(
      {
        text: z
          .string({ error: "text must be a string" })
          .trim()
          .min(1, { error: "text must not be empty" })
          .max(65_536, { error: "text is at most 65536 characters" }),
        label: z.string({ error: "label must be a string" }).min(1).max(64, { error: "label is at most 64 characters" }).optional(),
        /** Only for connections of this tenant (one tenant's contacts are not another's); default every connection. */
        tenant: z.string({ error: "tenant must be a string" }).min(1).max(256).optional(),
      },
      { error: 'must be { "text": string, "label"?: string, "tenant"?: string }' },
    ),
    { error: 'must be an array of { "text": string, "label"?: string, "tenant"?: string }' },
  )
  .max(1000, { error: "at most 1000 trusted texts" });

/**
 * `toolgate.config.json`: profiles and journal, families named by the package that makes them
 * (its `createXTools` export, or `factory`, called with `options` and `baseDir`).
 */
const jsonConfigSchema = z.object(
  {
    families: z.array(z.object({ package: z.string().min(1), factory: z.string().optional(), options: z.record(z.string(), z.unknown()).optional() }), {
      error: 'must be an array of { "package": name } entries',
    }),
    profiles: z.array(configProfileSchema, { error: "must be an array of profiles" }),
    /**
     * The state directory (relative to this file, or absolute): the journal, audit key and vault
     * live there unless configured elsewhere. Default outside the project:
     * `$XDG_STATE_HOME/toolgate/<project>-<8 hex>` (else `~/.local/state/…`), created 0700. Every
     * state path, wherever it is, is protected: no filesystem tool can reach it.
     */
    state: z.string({ error: "must be a directory path" }).optional(),
    /** Default `{ sqlite: "<state>/journal.db" }`. */
    journal: journalSchema.optional(),
    /** Where the audit HMAC key lives; default `<state>/audit.key` (created 0600 when missing). */
    auditKey: keySourceSchema.optional(),
    vault: vaultSchema.optional(),
    /** Defaults for `toolgate call`. */
    principal: z.string().optional(),
    tenant: z.string().optional(),
    /** The web console (`toolgate console`): port and approval webhook. */
    console: consoleConfigSchema.optional(),
    /** Trusted texts for every MCP connection's provenance session (`toolgate serve-mcp`). */
    trusted: trustedConfigSchema.optional(),
  },
  { error: "must be a JSON object" },
);

/**
 * A composition file: `toolgate.config.ts`, `.mjs`, `.js` (default export of `defineConfig`) or
 * `toolgate.config.json` (profiles and journal only, families named by package). What it shares
 * with the JSON file comes from that file's schema.
 */
export type ToolgateConfig = Readonly<Omit<z.output<typeof jsonConfigSchema>, "families" | "profiles" | "vault">> & {
  /** Build the families (and their connectors, verifier, workspace) for one run. */
  readonly compose: (context: ComposeContext) => Promise<Composition> | Composition;
  readonly profiles: readonly ConfigProfile[];
  /** The token vault: an encrypted file (default `<state>/tokens.vault`) and where its key comes from (never beside it). */
  readonly vault?: { readonly file?: string; readonly key: VaultKeySource };
};

export function defineConfig(config: ToolgateConfig): ToolgateConfig {
  return config;
}

export const CONFIG_NAMES = ["toolgate.config.ts", "toolgate.config.mjs", "toolgate.config.js", "toolgate.config.json"] as const;

/** Find the composition file: `--config`, else the first of CONFIG_NAMES in `cwd`. */
export function findConfig(cwd: string, explicit?: string): string {
  if (explicit) {
    const path = resolve(cwd, explicit);
    if (!existsSync(path)) throw new ToolError("config_invalid", `no configuration file at ${path}`);
    return path;
  }
  for (const name of CONFIG_NAMES) {
    const path = join(cwd, name);
    if (existsSync(path)) return path;
  }
  throw new ToolError("config_invalid", `no ${CONFIG_NAMES.join(", ")} in ${cwd}`, {
    details: { hint: "pass --config <file>, or run toolgate in the directory that has one" },
  });
}

export async function loadConfig(path: string): Promise<ToolgateConfig> {
  const ext = extname(path);
  if (ext === ".json") return fromJson(path);
  const module = ext === ".ts" ? await importTypeScript(path) : await importModule(path);
  const config = (module as { default?: unknown }).default;
  if (
    !config ||
    typeof config !== "object" ||
    typeof (config as ToolgateConfig).compose !== "function" ||
    !Array.isArray((config as ToolgateConfig).profiles)
  ) {
    throw new ToolError("config_invalid", `${basename(path)} must export default defineConfig({ compose, profiles })`);
  }
  // What the JSON file's schema checks, a module's default export is checked for too.
  const given = config as ToolgateConfig;
  const problems: string[] = [];
  for (const [key, schema] of [
    ["console", consoleConfigSchema],
    ["trusted", trustedConfigSchema],
  ] as const) {
    const check = given[key] === undefined ? undefined : schema.safeParse(given[key]);
    if (check && !check.success) problems.push(...check.error.issues.map((issue) => [key, ...issue.path.map(String)].join(".") + `: ${issue.message}`));
  }
  if (problems.length > 0) throw new ToolError("config_invalid", `${basename(path)} is invalid: ${problems.join("; ")}`, { details: { problems } });
  return { ...given, profiles: checkProfiles(basename(path), given.profiles) };
}

async function fromJson(path: string): Promise<ToolgateConfig> {
  let json: unknown;
  const text = await readFile(path, "utf8");
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw syntaxFailure(path, jsonErrorLine(text), "not valid JSON", cause);
  }
  const result = jsonConfigSchema.safeParse(json);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`));
    throw new ToolError("config_invalid", `${basename(path)} is invalid: ${problems.join("; ")}`, { details: { problems } });
  }
  const parsed = result.data;
  const baseDir = dirname(path);
  return {
    profiles: checkProfiles(basename(path), parsed.profiles),
    ...(parsed.state === undefined ? {} : { state: parsed.state }),
    ...(parsed.journal ? { journal: parsed.journal } : {}),
    ...(parsed.auditKey ? { auditKey: parsed.auditKey } : {}),
    ...(parsed.vault ? { vault: { key: parsed.vault.key, ...(parsed.vault.file === undefined ? {} : { file: parsed.vault.file }) } } : {}),
    ...(parsed.principal ? { principal: parsed.principal } : {}),
    ...(parsed.tenant ? { tenant: parsed.tenant } : {}),
    ...(parsed.console ? { console: parsed.console } : {}),
    ...(parsed.trusted ? { trusted: parsed.trusted } : {}),
    async compose() {
      const families: ToolFamily[] = [];
      for (const entry of parsed.families) {
        const module = (await import(resolveFrom(baseDir, entry.package))) as Record<string, unknown>;
        const factoryName = entry.factory ?? Object.keys(module).find((k) => /^create[A-Z]\w*Tools$/.test(k));
        const factory = factoryName ? module[factoryName] : undefined;
        if (typeof factory !== "function") throw new ToolError("config_invalid", `${entry.package} exports no family factory (createXTools)`);
        families.push((await (factory as (o: unknown) => unknown)({ ...entry.options, baseDir })) as ToolFamily);
      }
      return { families };
    },
  };
}

function resolveFrom(baseDir: string, specifier: string): string {
  if (specifier.startsWith(".") || specifier.startsWith("/")) return pathToFileURL(resolve(baseDir, specifier)).href;
  return specifier;
}

/**
 * Load a TypeScript composition file: type-stripped with the TypeScript compiler into a sibling
 * `.mjs` (so its relative imports resolve as they would), imported, then removed.
 */
async function importTypeScript(path: string): Promise<unknown> {
  let ts: typeof import("typescript");
  try {
    ts = (await import("typescript")).default;
  } catch (cause) {
    throw new ToolError("config_invalid", "a toolgate.config.ts needs the typescript package installed (or use .mjs/.json)", { cause });
  }
  const source = await readFile(path, "utf8");
  const { outputText: output, diagnostics } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
    fileName: path,
    reportDiagnostics: true,
  });
  const first = diagnostics?.find((d) => d.category === ts.DiagnosticCategory.Error);
  if (first) {
    const line = first.file && first.start !== undefined ? first.file.getLineAndCharacterOfPosition(first.start).line + 1 : undefined;
    throw syntaxFailure(path, line, ts.flattenDiagnosticMessageText(first.messageText, " "), undefined);
  }
  const temp = join(dirname(path), `.${basename(path, ".ts")}.${process.pid}.${Date.now()}.mjs`);
  await writeFile(temp, output, { mode: 0o600 });
  try {
    return await import(pathToFileURL(temp).href);
  } finally {
    await rm(temp, { force: true });
  }
}

/** Import a JavaScript composition file; a syntax error in it is named with its file and line. */
async function importModule(path: string): Promise<unknown> {
  try {
    return await import(pathToFileURL(path).href);
  } catch (cause) {
    const unresolved = importFailure(path, cause);
    if (unresolved) throw unresolved;
    if (!(cause instanceof SyntaxError)) throw cause;
    throw syntaxFailure(path, moduleErrorLine(await readFile(path, "utf8")), cause.message, cause);
  }
}

export type { Journal };
