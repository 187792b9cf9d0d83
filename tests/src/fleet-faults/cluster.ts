import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(new URL("../../../scripts/postgres.sh", import.meta.url));
const bin = process.env["TOOLGATE_PG_BIN"] ?? "/usr/lib/postgresql/15/bin";

/** A throwaway PostgreSQL cluster of this test's own (never the one other tests share), which it may stop and start. */
export interface Cluster {
  readonly url: string;
  /** `pg_ctl stop -m <mode>`, a pause while it is down, then start again on the same port. */
  restart(mode: "fast" | "immediate", downMs: number): Promise<void>;
  stop(): void;
}

/** The cluster belongs to the `postgres` user when we are root (see scripts/postgres.sh). */
const asOwner = async (args: string[]): Promise<void> => {
  const [file, ...rest] = process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args;
  await promisify(execFile)(file!, rest, { timeout: 120_000 }); // the event loop runs on meanwhile: calls in flight see the server go
};

export function startCluster(): Cluster {
  const out = execFileSync("bash", [script, "start"], { encoding: "utf8", timeout: 120_000 });
  const url = /TOOLGATE_PG_URL=(\S+)/.exec(out)?.[1];
  const dir = /TOOLGATE_PG_DIR=(\S+)/.exec(out)?.[1];
  if (!url || !dir) throw new Error(`scripts/postgres.sh printed no cluster: ${out}`);
  const port = new URL(url).port;
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories='${dir}' -c max_connections=100 -c fsync=on`;
  return {
    url,
    async restart(mode, downMs) {
      await asOwner([`${bin}/pg_ctl`, "-D", `${dir}/data`, "-m", mode, "-w", "-t", "60", "stop"]);
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await asOwner([`${bin}/pg_ctl`, "-D", `${dir}/data`, "-l", `${dir}/server.log`, "-w", "-t", "60", "-o", options, "start"]);
    },
    stop: () => execFileSync("bash", [script, "stop", dir], { stdio: "ignore", timeout: 120_000 }),
  };
}
