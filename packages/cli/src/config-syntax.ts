import { spawnSync } from "node:child_process";
import { basename } from "node:path";
import { ToolError } from "@toolgate/core";

/** A composition file that does not parse: a `config_invalid` naming the file, line and what is wrong. */
export function syntaxFailure(path: string, line: number | undefined, message: string, cause: unknown): ToolError {
  const where = line === undefined ? basename(path) : `${basename(path)}:${line}`;
  return new ToolError("config_invalid", `${where}: ${message}`, {
    cause,
    details: {
      file: path,
      ...(line === undefined ? {} : { line }),
      hint: `fix the syntax in ${path}${line === undefined ? "" : ` at line ${line}`}, then run the command again`,
    },
  });
}

/**
 * The line a JSON text stops parsing at: the shortest prefix that fails for a reason other than
 * ending too soon holds the offending character (binary search; the parser's messages carry no
 * position on every Node version).
 */
export function jsonErrorLine(text: string): number {
  const failsEarly = (length: number): boolean => {
    try {
      JSON.parse(text.slice(0, length));
      return false;
    } catch (error) {
      // Ending too soon: "end of JSON input", or a token cut at the prefix's end (its position is the end).
      const message = error instanceof Error ? error.message : "";
      const position = /at position (\d+)/.exec(message);
      return !/end of JSON input/i.test(message) && !(position && Number(position[1]) >= length);
    }
  };
  if (!failsEarly(text.length)) return lineAt(text, text.trimEnd().length);
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (failsEarly(mid)) high = mid;
    else low = mid + 1;
  }
  return lineAt(text, Math.max(0, low - 1));
}

/** Where a module that failed with a SyntaxError stops parsing, by `node --check` (the import's own error has no line). */
export function moduleErrorLine(source: string): number | undefined {
  const checked = spawnSync(process.execPath, ["--input-type=module", "--check"], { input: source, encoding: "utf8", timeout: 10_000 });
  if (checked.status === 0) return undefined;
  const match = /^\[stdin\]:(\d+)$/m.exec(checked.stderr ?? "");
  return match ? Number(match[1]) : undefined;
}

function lineAt(text: string, index: number): number {
  return text.slice(0, index).split("\n").length;
}

/**
 * A composition file whose imports do not resolve (a package not installed, a name a module does not
 * export): a `config_invalid` naming the file and what to do, rather than a syntax hint.
 */
export function importFailure(path: string, cause: unknown): ToolError | undefined {
  const code = (cause as { code?: unknown } | null)?.code;
  const message = cause instanceof Error ? cause.message : "";
  const missing = /Cannot find (?:package|module) '([^']+)'/.exec(message);
  if (code === "ERR_MODULE_NOT_FOUND" && missing) {
    const name = missing[1] ?? "";
    const hint = name.startsWith("/") || name.startsWith(".") ? `check the path ${name}` : `install it beside ${basename(path)} (npm install ${name})`;
    return new ToolError("config_invalid", `${basename(path)} imports ${name}, which cannot be found`, {
      cause,
      details: { file: path, hint: `${hint}, then run the command again` },
    });
  }
  const unexported = /The requested module '([^']+)' does not provide an export named '([^']+)'/.exec(message);
  if (cause instanceof SyntaxError && unexported) {
    return new ToolError("config_invalid", `${basename(path)}: ${unexported[1]} has no export named ${unexported[2]}`, {
      cause,
      details: { file: path, hint: `check the names ${basename(path)} imports from ${unexported[1]} (its README lists them), then run the command again` },
    });
  }
  return undefined;
}
