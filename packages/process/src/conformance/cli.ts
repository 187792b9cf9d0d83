import { runConformance, type ConformanceOptions } from "./run-conformance.js";

const USAGE = "usage: toolgate-tool-test [--input <tool>=<json>]... [--slow <tool>=<json>] [--timeout <ms>] [--cwd <dir>] -- <command> [args...]";

/**
 * The conformance kit as a command line: parses `argv` (without node and the script), runs every
 * check, prints one `PASS`/`FAIL` line per check and a summary. Returns the exit code: 0 when all
 * pass, 1 when any fails, 2 for a usage error. `toolgate tool test` calls this.
 */
export async function runConformanceCli(argv: readonly string[], print: (line: string) => void = (l) => console.log(l)): Promise<number> {
  const split = argv.indexOf("--");
  const flags = split < 0 ? [] : argv.slice(0, split);
  const [command, ...args] = split < 0 ? argv : argv.slice(split + 1);
  // A --help or -h of our own (before any `--`) prints the usage: never a program to start.
  if ((split < 0 ? argv.slice(0, 1) : flags).some((a) => a === "--help" || a === "-h")) {
    print(USAGE);
    return 0;
  }
  if (!command) {
    print(USAGE);
    return 2;
  }
  const inputs: Record<string, unknown> = {};
  let slow: ConformanceOptions["slow"];
  let timeoutMs: number | undefined;
  let cwd: string | undefined;
  const pair = (text: string | undefined): [string, unknown] => {
    const eq = text?.indexOf("=") ?? -1;
    if (!text || eq <= 0) throw new Error(`expected <tool>=<json>, got ${JSON.stringify(text)}`);
    return [text.slice(0, eq), JSON.parse(text.slice(eq + 1)) as unknown];
  };
  try {
    for (let i = 0; i < flags.length; i++) {
      const flag = flags[i];
      const value = flags[++i];
      if (flag === "--input") {
        const [tool, input] = pair(value);
        inputs[tool] = input;
      } else if (flag === "--slow") {
        const [tool, input] = pair(value);
        slow = { tool, input };
      } else if (flag === "--timeout") {
        timeoutMs = Number(value);
        if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new Error("--timeout needs a whole number of milliseconds");
      } else if (flag === "--cwd") cwd = value;
      else throw new Error(`unknown option ${JSON.stringify(flag)}`);
    }
  } catch (error) {
    print(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const report = await runConformance({
    command,
    args,
    inputs,
    ...(slow ? { slow } : {}),
    ...(timeoutMs ? { timeoutMs } : {}),
    ...(cwd ? { cwd } : {}),
    onLine: print,
  });
  print(`${report.passed} passed, ${report.failed} failed`);
  return report.failed === 0 ? 0 : 1;
}
