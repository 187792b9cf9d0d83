// The PostgreSQL server the fleet crash test runs against: the one in TOOLGATE_PG_URL (as .ci/run
// and the other PostgreSQL tests use), or a throwaway cluster from scripts/postgres.sh (loopback only).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(new URL("../../../scripts/postgres.sh", import.meta.url));
const bin = process.env["TOOLGATE_PG_BIN"] ?? "/usr/lib/postgresql/15/bin";

/** Why the test cannot run here, or undefined. Under CI nothing is skipped: a missing server fails the test. */
export const postgresSkipReason: string | undefined =
  process.env["TOOLGATE_PG_URL"] || process.env["CI"] || existsSync(`${bin}/initdb`)
    ? undefined
    : "no PostgreSQL (set TOOLGATE_PG_URL, or install the server binaries scripts/postgres.sh starts)";

export interface PostgresServer {
  readonly url: string;
  /** Stop the cluster this test started (nothing for a server it was given). */
  stop(): void;
}

export function postgresServer(): PostgresServer {
  const given = process.env["TOOLGATE_PG_URL"];
  if (given) return { url: given, stop: () => undefined };
  const out = execFileSync("bash", [script, "start"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 });
  const url = /TOOLGATE_PG_URL=(\S+)/.exec(out)?.[1];
  const dir = /TOOLGATE_PG_DIR=(\S+)/.exec(out)?.[1];
  if (!url || !dir) throw new Error(`scripts/postgres.sh printed no server: ${out}`);
  return { url, stop: () => void execFileSync("bash", [script, "stop", dir], { stdio: "ignore", timeout: 120_000 }) };
}
