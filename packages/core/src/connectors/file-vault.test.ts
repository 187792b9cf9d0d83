import { chmodSync, promises as fsp, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ToolError } from "../errors.js";
import { createFileVault, generateVaultKey } from "./file-vault.js";
import type { Connection, TokenSet } from "./types.js";

const connection: Connection = { id: "google-acme", provider: "google", tenant: "acme", isDefault: true };
const tokens: TokenSet = {
  accessToken: "access-secret-0001",
  refreshToken: "refresh-secret-0001",
  expiresAt: 1_700_000_000_000,
  scopes: ["mail.read", "mail.send"],
  tokenType: "Bearer",
};

let root: string;
let dataDir: string;
let keyDir: string;
let keyFile: string;
let vaultPath: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "toolgate-vault-"));
  dataDir = join(root, "data");
  keyDir = join(root, "keys");
  vaultPath = join(dataDir, "tokens.vault");
  keyFile = join(keyDir, "vault.key");
  writeKey(keyFile, generateVaultKey());
});

afterEach(async () => {
  vi.restoreAllMocks();
  await fsp.rm(root, { recursive: true, force: true });
});

function writeKey(path: string, key: string, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${key}\n`, { mode });
}

async function expectConfigInvalid(promise: Promise<unknown>, pattern: RegExp): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ToolError.is(error, "config_invalid")).toBe(true);
  expect((error as ToolError).message).toMatch(pattern);
  return error as ToolError;
}

describe("file vault: refusals first", () => {
  it("a wrong key is a clear config_invalid naming the file, and the file is not overwritten", async () => {
    const vault = createFileVault({ path: vaultPath, key: { file: keyFile } });
    await vault.put(connection, tokens);
    const before = readFileSync(vaultPath);

    const otherKeyFile = join(root, "other-keys", "vault.key");
    writeKey(otherKeyFile, generateVaultKey());
    const wrong = createFileVault({ path: vaultPath, key: { file: otherKeyFile } });
    const error = await expectConfigInvalid(wrong.list(), /different key/);
    expect(error.message).toContain(vaultPath);
    await expectConfigInvalid(wrong.put({ ...connection, id: "another" }, tokens), /different key/);
    await expectConfigInvalid(wrong.writeTokens(connection.id, tokens), /different key/);
    await expectConfigInvalid(wrong.remove(connection.id), /different key/);
    expect(readFileSync(vaultPath).equals(before)).toBe(true);
  });

  it.each([
    ["garbage", () => "not json at all"],
    ["empty", () => ""],
    [
      "flipped ciphertext",
      (text: string) => {
        const envelope = JSON.parse(text) as { data: string };
        const bytes = Buffer.from(envelope.data, "base64");
        bytes[0] = bytes[0]! ^ 0xff;
        return JSON.stringify({ ...envelope, data: bytes.toString("base64") });
      },
    ],
    [
      "flipped tag",
      (text: string) => {
        const envelope = JSON.parse(text) as { tag: string };
        const bytes = Buffer.from(envelope.tag, "base64");
        bytes[3] = bytes[3]! ^ 0x01;
        return JSON.stringify({ ...envelope, tag: bytes.toString("base64") });
      },
    ],
    ["truncated", (text: string) => text.slice(0, Math.floor(text.length / 2))],
    ["another format", () => JSON.stringify({ format: "something-else", version: 1 })],
  ])("a corrupted vault (%s) is config_invalid naming the file and is never overwritten", async (_name, corrupt) => {
    const vault = createFileVault({ path: vaultPath, key: { file: keyFile } });
    await vault.put(connection, tokens);
    writeFileSync(vaultPath, corrupt(readFileSync(vaultPath, "utf8")));
    const corrupted = readFileSync(vaultPath);

    const error = await expectConfigInvalid(vault.list(), /corrupted/);
    expect(error.message).toContain(vaultPath);
    expect(error.message).toMatch(/left untouched/);
    await expectConfigInvalid(vault.readTokens(connection.id), /corrupted/);
    await expectConfigInvalid(vault.put({ ...connection, id: "fresh" }, tokens), /corrupted/);
    await expectConfigInvalid(vault.writeTokens(connection.id, tokens), /corrupted/);
    expect(readFileSync(vaultPath).equals(corrupted)).toBe(true);
    expect(readdirSync(dataDir)).toEqual(["tokens.vault"]);
  });

  it("refuses a key file readable by group or others", () => {
    const loose = join(root, "loose", "vault.key");
    writeKey(loose, generateVaultKey(), 0o640);
    chmodSync(loose, 0o640);
    expect(() => createFileVault({ path: vaultPath, key: { file: loose } })).toThrow(/group or others \(mode 0640\)/);
    chmodSync(loose, 0o604);
    expect(() => createFileVault({ path: vaultPath, key: { file: loose } })).toThrow(ToolError);
  });

  it("refuses a key stored beside the data", () => {
    const beside = join(dataDir, "vault.key");
    writeKey(beside, generateVaultKey());
    expect(() => createFileVault({ path: vaultPath, key: { file: beside } })).toThrow(/same directory as the vault/);
  });

  it("refuses a missing, malformed or short key without echoing it", () => {
    expect(() => createFileVault({ path: vaultPath, key: { file: join(keyDir, "missing.key") } })).toThrow(/cannot be read \(ENOENT\)/);
    expect(() => createFileVault({ path: vaultPath, key: { env: "TOOLGATE_TEST_VAULT_KEY", environment: {} } })).toThrow(
      /TOOLGATE_TEST_VAULT_KEY .* is not set/,
    );
    const short = "c2hvcnQta2V5LXZhbHVl";
    let message = "";
    try {
      createFileVault({ path: vaultPath, key: { env: "K", environment: { K: short } } });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/must be 32 bytes/);
    expect(message).not.toContain(short);
  });

  it("every write failure leaves the previous vault intact and no temporary file behind", async () => {
    const vault = createFileVault({ path: vaultPath, key: { file: keyFile } });
    await vault.put(connection, tokens);
    const before = readFileSync(vaultPath);
    vi.spyOn(fsp, "rename").mockRejectedValueOnce(Object.assign(new Error("simulated crash"), { code: "EIO" }));
    await expectConfigInvalid(vault.writeTokens(connection.id, { ...tokens, accessToken: "access-secret-0002" }), /could not be written \(EIO\).*unchanged/);
    expect(readFileSync(vaultPath).equals(before)).toBe(true);
    expect(readdirSync(dataDir)).toEqual(["tokens.vault"]);
    expect((await vault.readTokens(connection.id))?.accessToken).toBe("access-secret-0001");
  });
});

describe("file vault: what it keeps", () => {
  it("round trip: what is put is what is read, after a new vault opens the same file", async () => {
    const vault = createFileVault({ path: vaultPath, key: { file: keyFile }, clock: () => 42 });
    await vault.put(connection, tokens);
    await vault.put({ id: "notion-main", provider: "notion" }, { accessToken: "notion-secret-01", expiresAt: 9, scopes: ["pages.write"], tokenType: "Bearer" });

    const reopened = createFileVault({ path: vaultPath, key: { file: keyFile } });
    expect(await reopened.readTokens(connection.id)).toEqual(tokens);
    expect(await reopened.readTokens("nobody")).toBeUndefined();
    const list = await reopened.list();
    expect(list.map((c) => c.id)).toEqual(["google-acme", "notion-main"]);
    expect(list[0]).toMatchObject({
      provider: "google",
      tenant: "acme",
      isDefault: true,
      scopes: ["mail.read", "mail.send"],
      refreshable: true,
      updatedAt: 42,
    });
    expect(list[1]).toMatchObject({ refreshable: false, isDefault: false });
    expect(JSON.stringify(list)).not.toMatch(/secret/);
    expect(await reopened.remove("notion-main")).toBe(true);
    expect(await reopened.remove("notion-main")).toBe(false);
    expect((await vault.list()).map((c) => c.id)).toEqual(["google-acme"]);
  });

  it("encrypts at rest: no secret, scope or id appears in the file", async () => {
    const vault = createFileVault({ path: vaultPath, key: { file: keyFile } });
    await vault.put(connection, tokens);
    const text = readFileSync(vaultPath, "utf8");
    for (const plain of [tokens.accessToken, tokens.refreshToken!, "mail.read", "google-acme", "acme"]) expect(text).not.toContain(plain);
    expect(JSON.parse(text)).toMatchObject({ format: "toolgate.vault", version: 1, cipher: "aes-256-gcm" });
  });

  it("writes the file with mode 0600 (and its new directory 0700), whatever the umask", async () => {
    const previous = process.umask(0o000);
    try {
      const vault = createFileVault({ path: vaultPath, key: { file: keyFile } });
      await vault.put(connection, tokens);
      await vault.writeTokens(connection.id, { ...tokens, accessToken: "access-secret-0003" });
    } finally {
      process.umask(previous);
    }
    expect(statSync(vaultPath).mode & 0o777).toBe(0o600);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
  });

  it("writes atomically: a complete, flushed temporary file is renamed over the vault", async () => {
    const vault = createFileVault({ path: vaultPath, key: { file: keyFile } });
    await vault.put(connection, tokens);
    const inodeBefore = statSync(vaultPath).ino;
    const seen: { from: string; mode: number; complete: boolean }[] = [];
    const realRename = fsp.rename.bind(fsp);
    vi.spyOn(fsp, "rename").mockImplementation(async (from, to) => {
      const text = readFileSync(from, "utf8");
      seen.push({ from: String(from), mode: statSync(from).mode & 0o777, complete: text.endsWith("}\n") && JSON.parse(text).format === "toolgate.vault" });
      // The vault file still holds the previous, readable state until the rename.
      expect((await createFileVault({ path: vaultPath, key: { file: keyFile } }).readTokens(connection.id))?.accessToken).toBe("access-secret-0001");
      return realRename(from, to);
    });
    await vault.writeTokens(connection.id, { ...tokens, accessToken: "access-secret-0004" });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.from.startsWith(join(dataDir, "."))).toBe(true);
    expect(seen[0]!.mode).toBe(0o600);
    expect(seen[0]!.complete).toBe(true);
    expect(statSync(vaultPath).ino).not.toBe(inodeBefore);
    expect(readdirSync(dataDir)).toEqual(["tokens.vault"]);
    expect((await vault.readTokens(connection.id))?.accessToken).toBe("access-secret-0004");
  });

  it("concurrent writes in one process are serialized: none is lost", async () => {
    const vault = createFileVault({ path: vaultPath, key: { env: "VAULT_KEY", environment: { VAULT_KEY: generateVaultKey() } } });
    await Promise.all(Array.from({ length: 12 }, (_, i) => vault.put({ id: `c${i}`, provider: "google", principal: `p${i}` }, tokens)));
    expect((await vault.list()).map((c) => c.id).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `c${i}`).sort());
  });

  it("accepts a hex key from the environment", async () => {
    const hex = Buffer.alloc(32, 7).toString("hex");
    const vault = createFileVault({ path: vaultPath, key: { env: "K", environment: { K: hex } } });
    await vault.put(connection, tokens);
    expect(await createFileVault({ path: vaultPath, key: { env: "K", environment: { K: hex } } }).readTokens(connection.id)).toEqual(tokens);
  });
});
