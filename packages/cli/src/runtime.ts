import { randomBytes } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { ToolError, createGate, createMemoryJournal, createToolRegistry, type Gate, type Journal, type ToolRegistry } from "@toolgate/core";
import { createFileVault, type TokenVault } from "@toolgate/core/connectors";
import { withConfiguredWitness } from "./commands/audit.js";
import { findConfig, loadConfig, type Composition, type ToolgateConfig } from "./config.js";
import { checkApprovalEdits, type ConfigProfile } from "./config-profiles.js";
import { webhookSecretFile } from "./console-config.js";
import { CliFailure, EXIT } from "./output.js";
import { openStateDir, protectStatePaths } from "./state.js";

/** One composed run of the CLI: the gate and everything it was built from. */
export interface Runtime {
  readonly configPath: string;
  readonly baseDir: string;
  /** Where the gate's state lives (journal, audit key, vault by default); protected. */
  readonly stateDir: string;
  readonly config: ToolgateConfig;
  readonly registry: ToolRegistry;
  readonly gate: Gate;
  readonly journal: Journal;
  readonly auditKey: Buffer;
  readonly profiles: readonly ConfigProfile[];
  readonly composition: Composition;
  /** The token vault, when the configuration names one. */
  readonly vault: TokenVault | undefined;
  profile(name: string): ConfigProfile;
  close(): Promise<void>;
}

export interface OpenRuntimeOptions {
  readonly cwd: string;
  readonly configPath?: string;
}

/** Load the composition file, open the journal, compose the families and build the gate. */
export async function openRuntime(options: OpenRuntimeOptions): Promise<Runtime> {
  const configPath = findConfig(options.cwd, options.configPath);
  const baseDir = dirname(configPath);
  const config = await loadConfig(configPath);
  // Every path of the gate's state is protected before any of it is opened or any family is composed.
  const stateDir = openStateDir(baseDir, config.state);
  const paths = statePaths(baseDir, stateDir, config);
  // The composition file too: rewritten by a tool, the next run would execute it beside the audit key.
  protectStatePaths(baseDir, [configPath, paths.journal, paths.auditKey, paths.vault, paths.vaultKey, paths.witness, webhookSecretFile(baseDir, config)]);
  const auditKey = await readAuditKey(baseDir, config.auditKey, stateDir);
  const journal = withConfiguredWitness(await openJournal(baseDir, config.journal, auditKey, stateDir), baseDir, config.journal, auditKey);
  const secrets: string[] = [];
  const vault = openVault(baseDir, config.vault, stateDir);
  let composition: Composition;
  try {
    composition = await config.compose({ baseDir, secrets, vault, stateDir });
  } catch (cause) {
    await journal.close();
    throw cause;
  }
  let registry: ToolRegistry;
  let gate: Gate;
  try {
    registry = createToolRegistry({ families: composition.families }) as unknown as ToolRegistry;
    checkApprovalEdits(basename(configPath), config.profiles, composition, (id) => registry.describe(id)?.inputSchema);
    gate = createGate({
      registry,
      journal,
      secrets,
      ...(composition.connectors ? { connectors: composition.connectors } : {}),
      ...(composition.verifier ? { verifier: composition.verifier } : {}),
      ...(composition.workspace ? { workspace: composition.workspace } : {}),
    }) as unknown as Gate;
  } catch (cause) {
    // What the composition started (a tool process) is stopped, or it would keep the command running.
    await Promise.allSettled([Promise.resolve().then(() => composition.close?.()), journal.close()]);
    throw cause;
  }
  const byName = new Map(config.profiles.map((p) => [p.name, p]));
  return {
    configPath,
    baseDir,
    stateDir,
    config,
    registry,
    gate,
    journal,
    auditKey,
    profiles: config.profiles,
    composition,
    vault,
    profile(name: string): ConfigProfile {
      const found = byName.get(name);
      if (!found) throw new CliFailure(`no profile named ${JSON.stringify(name)}`, EXIT.usage, `profiles: ${[...byName.keys()].join(", ") || "none"}`);
      return found;
    },
    async close() {
      await gate.drain();
      await composition.close?.();
      await journal.close();
    },
  };
}

/** The files of the gate's state the configuration names or defaults to (undefined: kept elsewhere, or none). */
function statePaths(baseDir: string, stateDir: string, config: ToolgateConfig) {
  const journal = config.journal;
  const kept = (file: string | undefined, fallback: string) => resolve(baseDir, file ?? join(stateDir, fallback));
  return {
    journal: journal && !("sqlite" in journal) ? undefined : kept(journal?.sqlite, "journal.db"),
    auditKey: config.auditKey && "env" in config.auditKey ? undefined : kept(config.auditKey?.file, "audit.key"),
    vault: config.vault ? kept(config.vault.file, "tokens.vault") : undefined,
    vaultKey: config.vault && "file" in config.vault.key ? resolve(baseDir, config.vault.key.file) : undefined,
    witness: journal?.witness ? resolve(baseDir, journal.witness) : undefined,
  };
}

/** The audit key: from the environment, or a 0600 key file (default in the state directory) created on first use. */
export async function readAuditKey(baseDir: string, where: ToolgateConfig["auditKey"], stateDir: string): Promise<Buffer> {
  if (where && "env" in where) {
    const value = process.env[where.env];
    if (!value) throw new ToolError("config_invalid", `the audit key variable ${where.env} is not set`);
    return Buffer.from(value, "utf8");
  }
  const path = resolve(baseDir, where && "file" in where ? where.file : join(stateDir, "audit.key"));
  if (!existsSync(path)) {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    await writeFile(path, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600, flag: "wx" }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    });
  }
  const mode = statSync(path).mode & 0o077;
  if (mode !== 0) {
    await chmod(path, 0o600).catch(() => undefined);
    if ((statSync(path).mode & 0o077) !== 0) throw new ToolError("config_invalid", `the audit key file ${path} is readable by others; chmod 600 it`);
  }
  const key = (await readFile(path, "utf8")).trim();
  if (key.length < 32) throw new ToolError("config_invalid", `the audit key in ${path} is too short`);
  return Buffer.from(key, "utf8");
}

function openVault(baseDir: string, where: ToolgateConfig["vault"], stateDir: string): TokenVault | undefined {
  if (!where) return undefined;
  const key = "file" in where.key ? { file: resolve(baseDir, where.key.file) } : where.key;
  return createFileVault({ path: resolve(baseDir, where.file ?? join(stateDir, "tokens.vault")), key });
}

async function openJournal(baseDir: string, where: ToolgateConfig["journal"], auditKey: Buffer, stateDir: string): Promise<Journal> {
  const options = { auditKey, ...(where?.retainReadOutputs ? { retainReadOutputs: true } : {}) };
  if (where && "memory" in where) return createMemoryJournal(options);
  if (where && "postgres" in where) {
    const { connectPostgresJournal } = await import("@toolgate/store-postgres");
    return connectPostgresJournal(where.postgres, { ...options, ...(where.schema ? { schema: where.schema } : {}) });
  }
  const path = resolve(baseDir, where && "sqlite" in where ? where.sqlite : join(stateDir, "journal.db"));
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const { openSqliteJournal } = await import("@toolgate/store-sqlite");
  return openSqliteJournal(path, options);
}
