import { existsSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, extname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  ToolError,
  defineProfile,
  type ConnectorRuntime,
  type Journal,
  type Profile,
  type TokenVault,
  type ToolFamily,
  type VaultKeySource,
  type Verifier,
  type Workspace,
} from "@toolgate/core";

/** What a composition file may hand the CLI for one run. */
export interface ComposeContext {
  /** The directory of the configuration file; relative paths resolve from here. */
  readonly baseDir: string;
  /** Secrets the composition learned (client secrets, keys): redacted everywhere. */
  readonly secrets: string[];
  /** The token vault named by the configuration, for a connector runtime; undefined without one. */
  readonly vault: TokenVault | undefined;
}

/** Everything the gate is built from. Returned by a composition file's `compose()`. */
export interface Composition {
  readonly families: readonly ToolFamily[];
  readonly connectors?: ConnectorRuntime;
  readonly verifier?: Verifier;
  readonly workspace?: Workspace;
  /** Called when the CLI is done (stop processes, emulators, pools). */
  readonly close?: () => Promise<void> | void;
}

/**
 * A composition file: `toolgate.config.ts`, `.mjs`, `.js` (default export of `defineConfig`) or
 * `toolgate.config.json` (profiles and journal only, families named by package).
 */
export interface ToolgateConfig {
  /** Build the families (and their connectors, verifier, workspace) for one run. */
  readonly compose: (context: ComposeContext) => Promise<Composition> | Composition;
  readonly profiles: readonly Profile[];
  /** Default `{ sqlite: ".toolgate/journal.db" }`. */
  readonly journal?: { readonly sqlite: string } | { readonly postgres: string } | { readonly memory: true };
  /** The token vault: an encrypted file and where its key comes from (never beside it). */
  readonly vault?: { readonly file: string; readonly key: VaultKeySource };
  /** Where the audit HMAC key lives; default `.toolgate/audit.key` (created 0600 when missing). */
  readonly auditKey?: { readonly file: string } | { readonly env: string };
  /** Defaults for `toolgate call`. */
  readonly principal?: string;
  readonly tenant?: string;
}

export function defineConfig(config: ToolgateConfig): ToolgateConfig {
  return config;
}

/** The shape a JSON composition file has. */
interface JsonConfig {
  readonly families: readonly { readonly package: string; readonly factory?: string; readonly options?: Record<string, unknown> }[];
  readonly profiles: readonly Parameters<typeof defineProfile>[0][];
  readonly journal?: ToolgateConfig["journal"];
  readonly auditKey?: ToolgateConfig["auditKey"];
  readonly vault?: ToolgateConfig["vault"];
  readonly principal?: string;
  readonly tenant?: string;
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
  throw new ToolError("config_invalid", `no ${CONFIG_NAMES.join(", ")} in ${cwd}`, { details: { hint: "pass --config <file>, or run toolgate in the directory that has one" } });
}

export async function loadConfig(path: string): Promise<ToolgateConfig> {
  const ext = extname(path);
  if (ext === ".json") return fromJson(path);
  const module = ext === ".ts" ? await importTypeScript(path) : await import(pathToFileURL(path).href);
  const config = (module as { default?: unknown }).default;
  if (!config || typeof config !== "object" || typeof (config as ToolgateConfig).compose !== "function" || !Array.isArray((config as ToolgateConfig).profiles)) {
    throw new ToolError("config_invalid", `${basename(path)} must export default defineConfig({ compose, profiles })`);
  }
  return config as ToolgateConfig;
}

async function fromJson(path: string): Promise<ToolgateConfig> {
  let parsed: JsonConfig;
  try {
    parsed = JSON.parse(await readFile(path, "utf8")) as JsonConfig;
  } catch (cause) {
    throw new ToolError("config_invalid", `${basename(path)} is not valid JSON`, { cause });
  }
  if (!Array.isArray(parsed.families) || !Array.isArray(parsed.profiles)) {
    throw new ToolError("config_invalid", `${basename(path)} needs "families" and "profiles" arrays`);
  }
  const baseDir = dirname(path);
  return {
    profiles: parsed.profiles.map((p) => defineProfile(p)),
    ...(parsed.journal ? { journal: parsed.journal } : {}),
    ...(parsed.auditKey ? { auditKey: parsed.auditKey } : {}),
    ...(parsed.vault ? { vault: parsed.vault } : {}),
    ...(parsed.principal ? { principal: parsed.principal } : {}),
    ...(parsed.tenant ? { tenant: parsed.tenant } : {}),
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
  const output = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
    fileName: path,
  }).outputText;
  const temp = join(dirname(path), `.${basename(path, ".ts")}.${process.pid}.${Date.now()}.mjs`);
  await writeFile(temp, output, { mode: 0o600 });
  try {
    return await import(pathToFileURL(temp).href);
  } finally {
    await rm(temp, { force: true });
  }
}

export type { Journal };
