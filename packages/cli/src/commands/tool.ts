import { existsSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { CliFailure, EXIT, type Io } from "../output.js";
import { pythonTemplate, pythonTestCommand, typescriptTemplate } from "../templates/tool-process.js";

/**
 * Scaffold a tool process with its conformance test. Refuses a non-empty directory unless `force`;
 * with `force` it writes the scaffold's files and deletes nothing.
 */
export async function toolInit(dir: string, options: { lang: string; force?: boolean; name?: string }, io: Io): Promise<number> {
  if (options.lang !== "ts" && options.lang !== "python")
    throw new CliFailure(`--lang must be ts or python, not ${options.lang}`, EXIT.usage, `e.g. toolgate tool init ${dir} --lang python`);
  const target = resolve(dir);
  if (existsSync(target) && (await readdir(target)).length > 0 && !options.force) {
    throw new CliFailure(
      `${target} is not empty`,
      EXIT.failed,
      "choose an empty directory, or pass --force to write the scaffold beside what is there (nothing is deleted)",
    );
  }
  const name =
    (options.name ?? basename(target))
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, "_")
      .replace(/^[^a-z]+/, "") || "mytool";
  const files = options.lang === "python" ? pythonTemplate(name) : typescriptTemplate(name);
  await mkdir(target, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    const full = join(target, path);
    await mkdir(join(full, ".."), { recursive: true });
    await writeFile(full, content, { mode: path.endsWith(".py") ? 0o755 : 0o644 });
    io.out(`wrote ${join(dir, path)}`);
  }
  // The line is run verbatim: the directory is quoted for the shell when it needs to be.
  io.out(`next: cd ${shellWord(dir)} && ${options.lang === "python" ? pythonTestCommand("") : "npm install && npm test"}`);
  return EXIT.ok;
}

/** `word` as one POSIX shell word: as it is when plain, else single-quoted. */
const shellWord = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

/** Drive a tool process through the protocol checks: `toolgate tool test [flags] -- <command> [args]`. */
export async function toolTest(argv: readonly string[], io: Io): Promise<number> {
  const { runConformanceCli } = await import("@toolgate/process/conformance");
  return runConformanceCli(argv, (line) => io.out(line));
}
