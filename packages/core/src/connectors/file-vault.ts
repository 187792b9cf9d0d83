import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";
import { promises as fsp, readFileSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { z } from "zod";
import { ToolError } from "../errors.js";
import type { TokenVault } from "./types.js";
import { vaultDataSchema, vaultOver, type VaultData, type VaultStorage } from "./vault-store.js";

/**
 * Where the vault key comes from. It is never stored beside the data: a key file must not sit in
 * the vault file's directory, and must be readable by its owner only (mode 0600 or 0400).
 *
 * The key is 32 random bytes written as base64 or hex (`generateVaultKey()` makes one).
 */
export type VaultKeySource =
  | { readonly file: string }
  | {
      /** The environment variable holding the key. */
      readonly env: string;
      /** The environment to read; default `process.env`. */
      readonly environment?: Readonly<Record<string, string | undefined>>;
    };

export interface FileVaultOptions {
  /** The vault file. Created (with its directory, mode 0700) on the first write. */
  readonly path: string;
  readonly key: VaultKeySource;
  /** Milliseconds since the epoch, for `updatedAt`; default `Date.now`. */
  readonly clock?: () => number;
}

const FORMAT = "toolgate.vault";
const VERSION = 1;
const KEY_BYTES = 32;
const IV_BYTES = 12;

const envelopeSchema = z
  .object({
    format: z.literal(FORMAT),
    version: z.literal(VERSION),
    cipher: z.literal("aes-256-gcm"),
    keyCheck: z.string().regex(/^[0-9a-f]{32}$/),
    iv: z.string().min(1),
    tag: z.string().min(1),
    data: z.string(),
  })
  .strict();

/** A fresh vault key: 32 random bytes in base64, for an operator to put in a key file or variable. */
export function generateVaultKey(): string {
  return randomBytes(KEY_BYTES).toString("base64");
}

/**
 * A vault kept in one file, encrypted at rest with AES-256-GCM.
 *
 * - The key comes from an operator key file (owner-only permissions, not in the vault's
 *   directory) or an environment variable; it is checked when the vault is created, so a bad key
 *   source fails at start-up with `config_invalid`.
 * - Every write goes to a temporary file in the same directory (mode 0600), is flushed to disk,
 *   then renamed over the vault file; the directory is flushed too. A crash leaves the old vault or
 *   the new one, never half of one.
 * - A corrupted file, a file that is not a vault, or a vault written with another key is reported
 *   as `config_invalid` naming the file — and is never overwritten: every write reads the file
 *   first and stops there.
 * - The file is read on every operation, so several runtimes over the same file (or a runtime
 *   after a restart) see each other's refreshes. Writes are serialized within one process only.
 */
export function createFileVault(options: FileVaultOptions): TokenVault {
  if (!options || typeof options.path !== "string" || options.path === "") throw new ToolError("config_invalid", "createFileVault needs a path");
  const path = resolve(options.path);
  const rawKey = loadKey(options.key, path);
  const encryptionKey = Buffer.from(hkdfSync("sha256", rawKey, Buffer.alloc(0), "toolgate vault v1 encryption", KEY_BYTES));
  const keyCheck = createHmac("sha256", Buffer.from(hkdfSync("sha256", rawKey, Buffer.alloc(0), "toolgate vault v1 key check", KEY_BYTES)))
    .update(FORMAT)
    .digest("hex")
    .slice(0, 32);
  const aad = Buffer.from(`${FORMAT}/${VERSION}/${keyCheck}`, "utf8");

  const storage: VaultStorage = {
    location: path,
    async load(): Promise<VaultData> {
      let text: string;
      try {
        text = await fsp.readFile(path, "utf8");
      } catch (cause) {
        if ((cause as NodeJS.ErrnoException).code === "ENOENT") return { connections: {} };
        throw new ToolError("config_invalid", `vault ${path} cannot be read (${(cause as NodeJS.ErrnoException).code ?? "error"})`, { cause });
      }
      const corrupted = (why: string): ToolError =>
        new ToolError("config_invalid", `vault ${path} is corrupted or is not a Toolgate vault (${why}); it was left untouched`);
      let envelope: z.infer<typeof envelopeSchema>;
      try {
        const parsed = envelopeSchema.safeParse(JSON.parse(text));
        if (!parsed.success) throw corrupted("unexpected envelope");
        envelope = parsed.data;
      } catch (cause) {
        throw ToolError.is(cause) ? cause : corrupted("not JSON");
      }
      if (envelope.keyCheck !== keyCheck) {
        throw new ToolError("config_invalid", `vault ${path} was encrypted with a different key; it was left untouched`);
      }
      let plain: string;
      try {
        const decipher = createDecipheriv("aes-256-gcm", encryptionKey, Buffer.from(envelope.iv, "base64"));
        decipher.setAAD(aad);
        decipher.setAuthTag(Buffer.from(envelope.tag, "base64"));
        plain = Buffer.concat([decipher.update(Buffer.from(envelope.data, "base64")), decipher.final()]).toString("utf8");
      } catch {
        throw corrupted("authentication failed");
      }
      try {
        const data = vaultDataSchema.safeParse(JSON.parse(plain));
        if (!data.success) throw corrupted("unexpected contents");
        return data.data;
      } catch (cause) {
        throw ToolError.is(cause) ? cause : corrupted("unexpected contents");
      }
    },
    async save(data: VaultData): Promise<void> {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", encryptionKey, iv);
      cipher.setAAD(aad);
      const sealed = Buffer.concat([cipher.update(JSON.stringify(data), "utf8"), cipher.final()]);
      const envelope = {
        format: FORMAT,
        version: VERSION,
        cipher: "aes-256-gcm",
        keyCheck,
        iv: iv.toString("base64"),
        tag: cipher.getAuthTag().toString("base64"),
        data: sealed.toString("base64"),
      };
      await writeAtomically(path, `${JSON.stringify(envelope)}\n`);
    },
  };
  return vaultOver(storage, options.clock ?? Date.now);
}

/** Temp file beside the target (mode 0600), fsync, rename over the target, fsync the directory. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const dir = dirname(path);
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  let renamed = false;
  try {
    const handle = await fsp.open(temp, "wx", 0o600);
    try {
      await handle.chmod(0o600);
      await handle.writeFile(text, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.rename(temp, path);
    renamed = true;
    const dirHandle = await fsp.open(dir, "r");
    try {
      await dirHandle.sync();
    } catch {
      // some filesystems cannot fsync a directory; the rename itself is already atomic
    } finally {
      await dirHandle.close();
    }
  } catch (cause) {
    if (!renamed) await fsp.rm(temp, { force: true }).catch(() => undefined);
    throw new ToolError(
      "config_invalid",
      `vault ${path} could not be written (${(cause as NodeJS.ErrnoException).code ?? "error"}); the previous vault is unchanged`,
      { cause },
    );
  }
}

function loadKey(source: VaultKeySource, vaultPath: string): Buffer {
  if (!source || typeof source !== "object") throw new ToolError("config_invalid", "createFileVault needs key: { file } or { env }");
  if ("file" in source) {
    const file = resolve(source.file);
    let stat;
    try {
      stat = statSync(file);
    } catch (cause) {
      throw new ToolError("config_invalid", `vault key file ${file} cannot be read (${(cause as NodeJS.ErrnoException).code ?? "error"})`, { cause });
    }
    if (!stat.isFile()) throw new ToolError("config_invalid", `vault key file ${file} is not a regular file`);
    if ((stat.mode & 0o077) !== 0) {
      throw new ToolError(
        "config_invalid",
        `vault key file ${file} is readable or writable by group or others (mode ${(stat.mode & 0o777).toString(8).padStart(4, "0")}); make it 0600`,
      );
    }
    if (sameDirectory(file, vaultPath)) {
      throw new ToolError("config_invalid", `vault key file ${file} is in the same directory as the vault ${vaultPath}; keep the key away from the data`);
    }
    return decodeKey(readFileSync(file, "utf8"), `key file ${file}`);
  }
  if ("env" in source && typeof source.env === "string" && source.env !== "") {
    const value = (source.environment ?? process.env)[source.env];
    if (value === undefined || value === "") throw new ToolError("config_invalid", `environment variable ${source.env} holding the vault key is not set`);
    return decodeKey(value, `environment variable ${source.env}`);
  }
  throw new ToolError("config_invalid", "createFileVault needs key: { file } or { env }");
}

function decodeKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, "hex")
    : /^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)
      ? Buffer.from(trimmed, "base64")
      : Buffer.alloc(0);
  if (bytes.length !== KEY_BYTES) throw new ToolError("config_invalid", `the vault key in ${where} must be ${KEY_BYTES} bytes written as base64 or hex`);
  return bytes;
}

function sameDirectory(keyFile: string, vaultPath: string): boolean {
  const real = (p: string): string => {
    try {
      return realpathSync(p);
    } catch {
      return resolve(p);
    }
  };
  return real(dirname(keyFile)) === real(dirname(vaultPath));
}
