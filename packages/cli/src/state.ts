/**
 * The state directory: where the journal (unless configured elsewhere), the audit key, the vault
 * (by default) and the witness live. Outside any tool root by default, created
 * 0700, and every path of the gate's state is protected so no filesystem family can reach it.
 */
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { ToolError } from "@toolgate/core";
import { protectPath } from "@toolgate/core/boundary";

/**
 * The default state directory of a project: `$XDG_STATE_HOME/toolgate/<project>-<8 hex>` (else
 * `~/.local/state/toolgate/…`), the hex being the start of the SHA-256 of the project's absolute
 * directory, so two projects with one name never share state.
 */
export function defaultStateDir(baseDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env["XDG_STATE_HOME"];
  const root = xdg !== undefined && isAbsolute(xdg) ? xdg : join(env["HOME"] && isAbsolute(env["HOME"]) ? env["HOME"] : homedir(), ".local", "state");
  const project = resolve(baseDir);
  const tag = createHash("sha256").update(project).digest("hex").slice(0, 8);
  const name = (basename(project) || "root").replace(/[^A-Za-z0-9._-]/g, "_");
  return join(root, "toolgate", `${name}-${tag}`);
}

/** The configured (`state`, relative to the composition file) or default state directory, created 0700. */
export function openStateDir(baseDir: string, configured: string | undefined): string {
  if (configured !== undefined && (typeof configured !== "string" || configured.length === 0 || configured.includes("\0")))
    throw new ToolError("config_invalid", "state must be a directory path");
  const dir = configured === undefined ? defaultStateDir(baseDir) : resolve(baseDir, configured);
  // Protected before anything is created in it, so no tool can ever have seen it unprotected.
  protectPath(dir);
  if (!existsSync(dir)) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      chmodSync(dir, 0o700);
    } catch (cause) {
      throw new ToolError("config_invalid", `the state directory ${dir} could not be created`, {
        cause,
        details: { hint: 'set state: "<dir>" in the composition file' },
      });
    }
  }
  return dir;
}

/**
 * Protect every path of the gate's state the configuration names (journal, audit key, vault and
 * its key, witness), and an old-style `.toolgate` directory holding any of them, so a composition
 * that keeps its state inside the project still keeps it out of every tool's reach.
 */
export function protectStatePaths(baseDir: string, paths: readonly (string | undefined)[]): void {
  for (const given of paths) {
    if (given === undefined) continue;
    const path = resolve(baseDir, given);
    protectPath(path);
    for (let dir = dirname(path); dir !== dirname(dir); dir = dirname(dir)) {
      if (basename(dir) === ".toolgate") protectPath(dir);
    }
  }
}
