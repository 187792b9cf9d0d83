import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../../../", import.meta.url));
export const builtCli = join(root, "packages/cli/dist/bin.js");

/** A fenced block of a document: its language, its lines, and the `<!-- run … -->` marker before it, if any. */
export interface Block {
  readonly doc: string;
  readonly lang: string;
  readonly lines: readonly string[];
  readonly run: boolean;
  /** Text the block's combined output must hold (`expects "…" "…"` in the marker). */
  readonly expects: readonly string[];
}

/** Languages of blocks that are commands to type (the rest are code: ts, js, json). */
export const SHELL = new Set(["", "sh", "bash", "shell"]);

export function blocksOf(doc: string): Block[] {
  const text = readFileSync(join(root, doc), "utf8");
  const found: Block[] = [];
  for (const m of text.matchAll(/(?:^<!-- run(?::([^\n]*))? -->\n)?^```([\w-]*)\n([\s\S]*?)^```$/gm)) {
    const marker = m[0].startsWith("<!-- run");
    const expects = [...(m[1] ?? "").matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((e) => JSON.parse(`"${e[1]}"`) as string);
    found.push({ doc, lang: m[2] ?? "", lines: (m[3] ?? "").split("\n").filter((l) => l.trim() !== ""), run: marker, expects });
  }
  return found;
}

/** The key a block is listed under when it is not run: its document and first line. */
export const keyOf = (b: Block): string => `${b.doc}: ${b.lines[0] ?? ""}`;

/**
 * A copy of what the repository root holds after the quick start, as far as the shipped
 * composition file uses it: toolgate.config.mjs, the Python example, the demo script its check
 * names, the generated tool pages, a git repository (the repo family's root), node_modules (so
 * `npx toolgate` is the repository's CLI), a `toolgate` shim for the built CLI on PATH, and a state
 * directory of its own.
 */
export function quickStartCopy(prefix: string): { dir: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  copyFileSync(join(root, "toolgate.config.mjs"), join(dir, "toolgate.config.mjs"));
  cpSync(join(root, "examples"), join(dir, "examples"), { recursive: true });
  mkdirSync(join(dir, "scripts"));
  copyFileSync(join(root, "scripts/demo.mjs"), join(dir, "scripts/demo.mjs"));
  cpSync(join(root, "docs/tools"), join(dir, "docs/tools"), { recursive: true });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  const bin = join(dir, ".bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "toolgate"), `#!/bin/sh\nexec "${process.execPath}" "${builtCli}" "$@"\n`);
  chmodSync(join(bin, "toolgate"), 0o755);
  const git = spawnSync("git", ["init", "-q", dir], { encoding: "utf8" });
  if (git.status !== 0) throw new Error(`git init: ${git.stderr}`);
  const env: Record<string, string> = {
    PATH: `${bin}:${process.env["PATH"] ?? ""}`,
    HOME: dir,
    XDG_STATE_HOME: join(dir, ".state"),
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    TERM: "dumb",
  };
  return { dir, env };
}

export interface Ran {
  readonly line: string;
  readonly code: number;
  readonly output: string;
}

/**
 * Run one block's command lines in `dir`, one bash process per line, in order: exported variables
 * carry to the next line (and block) through a file; a line may say `# exit N` (default 0). `apr_…`
 * stands for the request id the commands printed last.
 */
export function runBlock(block: Block, dir: string, env: Record<string, string>, seen: { requestId?: string }): Ran[] {
  const envFile = join(dir, ".docs-commands-env");
  if (!existsSync(envFile)) writeFileSync(envFile, "");
  const ran: Ran[] = [];
  for (const raw of block.lines) {
    if (raw.trim().startsWith("#")) continue;
    let line = raw;
    if (line.includes("apr_…")) {
      if (!seen.requestId) throw new Error(`${block.doc}: "${raw}" needs a request id, and no command printed one before it`);
      line = line.replaceAll("apr_…", seen.requestId);
    }
    const script = `set -a; . "${envFile}"; set +a\n${line}\nrc=$?\nexport -p > "${envFile}"\nexit $rc\n`;
    const r = spawnSync("bash", ["-c", script], { cwd: dir, env, encoding: "utf8", timeout: 120_000 });
    const output = `${r.stdout}${r.stderr}`;
    const ids = output.match(/apr_[0-9a-f-]{36}/g);
    if (ids) seen.requestId = ids[ids.length - 1]!;
    ran.push({ line: raw, code: r.status ?? -1, output });
  }
  return ran;
}

/** The exit code a line says it ends with (`# exit N` in its comment), else 0. */
export const expectedExit = (line: string): number => Number(/#\s*exit (\d)\b/.exec(line)?.[1] ?? 0);
