import { randomBytes } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { ToolError, createGate, createMemoryJournal, createToolRegistry, type Gate, type Journal, type Profile, type ToolRegistry } from "@toolgate/core";
import { createFileVault, type TokenVault } from "@toolgate/core/connectors";
import { withConfiguredWitness } from "./commands/audit.js";
import { findConfig, loadConfig, type Composition, type ToolgateConfig } from "./config.js";

/** One composed run of the CLI: the gate and everything it was built from. */
export interface Runtime {
  readonly configPath: string;
  readonly baseDir: string;
  readonly config: ToolgateConfig;
  readonly registry: ToolRegistry;
  readonly gate: Gate;
  readonly journal: Journal;
  readonly auditKey: Buffer;
  readonly profiles: readonly Profile[];
  readonly composition: Composition;
  /** The token vault, when the configuration names one. */
  readonly vault: TokenVault | undefined;
  profile(name: string): Profile;
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
  const auditKey = await readAuditKey(baseDir, config.auditKey);
  const journal = withConfiguredWitness(await openJournal(baseDir, config.journal, auditKey), baseDir, config.journal, auditKey);
  const secrets: string[] = [];
  const vault = openVault(baseDir, config.vault);
  let composition: Composition;
  try {
    composition = await config.compose({ baseDir, secrets, vault });
  } catch (cause) {
    await journal.close();
    throw cause;
  }
  const registry = createToolRegistry({ families: composition.families }) as unknown as ToolRegistry;
  const gate = createGate({
    registry,
    journal,
    secrets,
    ...(composition.connectors ? { connectors: composition.connectors } : {}),
    ...(composition.verifier ? { verifier: composition.verifier } : {}),
    ...(composition.workspace ? { workspace: composition.workspace } : {}),
  }) as unknown as Gate;
  const byName = new Map(config.profiles.map((p) => [p.name, p]));
  return {
    configPath,
    baseDir,
    config,
    registry,
    gate,
    journal,
    auditKey,
    profiles: config.profiles,
    composition,
    vault,
    profile(name: string): Profile {
      const found = byName.get(name);
      if (!found)
        throw new ToolError("config_invalid", `no profile named ${JSON.stringify(name)}`, { details: { hint: `profiles: ${[...byName.keys()].join(", ")}` } });
      return found;
    },
    async close() {
      await gate.drain();
      await composition.close?.();
      await journal.close();
    },
  };
}

/** The audit key: from the environment, or a 0600 key file created on first use. */
export async function readAuditKey(baseDir: string, where: ToolgateConfig["auditKey"]): Promise<Buffer> {
  if (where && "env" in where) {
    const value = process.env[where.env];
    if (!value) throw new ToolError("config_invalid", `the audit key variable ${where.env} is not set`);
    return Buffer.from(value, "utf8");
  }
  const path = resolve(baseDir, where && "file" in where ? where.file : ".toolgate/audit.key");
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

function openVault(baseDir: string, where: ToolgateConfig["vault"]): TokenVault | undefined {
  if (!where) return undefined;
  const key = "file" in where.key ? { file: resolve(baseDir, where.key.file) } : where.key;
  return createFileVault({ path: resolve(baseDir, where.file), key });
}

async function openJournal(baseDir: string, where: ToolgateConfig["journal"], auditKey: Buffer): Promise<Journal> {
  if (where && "memory" in where) return createMemoryJournal({ auditKey });
  if (where && "postgres" in where) {
    const { connectPostgresJournal } = await import("@toolgate/store-postgres");
    return connectPostgresJournal(where.postgres, { auditKey });
  }
  const path = resolve(baseDir, where && "sqlite" in where ? where.sqlite : ".toolgate/journal.db");
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const { openSqliteJournal } = await import("@toolgate/store-sqlite");
  return openSqliteJournal(path, { auditKey });
}
