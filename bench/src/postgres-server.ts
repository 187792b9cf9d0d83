import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The server in TOOLGATE_PG_URL, or a throwaway one from scripts/postgres.sh. */
export function postgresServer(): { url?: string; reason: string; stop: () => void } {
  const given = process.env["TOOLGATE_PG_URL"];
  if (given) return { url: given, reason: "", stop: () => undefined };
  const script = fileURLToPath(new URL("../../scripts/postgres.sh", import.meta.url));
  try {
    const out = execFileSync("bash", [script, "start"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 });
    const url = /TOOLGATE_PG_URL=(\S+)/.exec(out)?.[1];
    const dir = /TOOLGATE_PG_DIR=(\S+)/.exec(out)?.[1];
    if (!url || !dir) return { reason: "scripts/postgres.sh printed no URL", stop: () => undefined };
    return { url, reason: "", stop: () => execFileSync("bash", [script, "stop", dir], { stdio: "ignore", timeout: 120_000 }) };
  } catch (cause) {
    const stderr = String((cause as { stderr?: unknown }).stderr ?? "").trim();
    return { reason: `no server could be started: ${stderr.split("\n").at(-1) || String(cause)}`, stop: () => undefined };
  }
}
