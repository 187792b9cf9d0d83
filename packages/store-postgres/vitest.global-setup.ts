import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

const script = fileURLToPath(new URL("../../scripts/postgres.sh", import.meta.url));

declare module "vitest" {
  export interface ProvidedContext {
    /** The server the tests use; empty when none could be had outside CI. */
    pgUrl: string;
    pgUnavailable: string;
  }
}

/**
 * Use the server in TOOLGATE_PG_URL, or start a throwaway one for this run. In CI a missing server
 * fails the run; locally the PostgreSQL tests are skipped with the reason printed.
 */
export default function setup(project: TestProject): () => void {
  let url = process.env["TOOLGATE_PG_URL"] ?? "";
  let dir = "";
  let reason = "";
  if (url === "") {
    try {
      const out = execFileSync("bash", [script, "start"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 });
      url = /TOOLGATE_PG_URL=(\S+)/.exec(out)?.[1] ?? "";
      dir = /TOOLGATE_PG_DIR=(\S+)/.exec(out)?.[1] ?? "";
      if (url === "") reason = `scripts/postgres.sh printed no URL: ${out}`;
    } catch (cause) {
      const stderr = (cause as { stderr?: string }).stderr ?? "";
      reason = `scripts/postgres.sh start failed: ${stderr || String(cause)}`;
    }
    if (url === "" && process.env["CI"]) throw new Error(`PostgreSQL tests need a server and none could be had in CI. ${reason}`);
    if (url === "") console.warn(`\nPostgreSQL tests skipped: ${reason}\n`);
  }
  project.provide("pgUrl", url);
  project.provide("pgUnavailable", reason);
  return () => {
    if (dir !== "") execFileSync("bash", [script, "stop", dir], { stdio: "ignore", timeout: 120_000 });
  };
}
