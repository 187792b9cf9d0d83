import { existsSync } from "node:fs";
import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { buildInventory, renderOperatorDocs } from "@toolgate/core/operator";
import { CliFailure, EXIT, type Io } from "../output.js";
import { progress } from "../progress.js";
import type { Runtime } from "../runtime.js";

export interface DocsOptions {
  readonly out: string;
  readonly check: boolean;
}

/**
 * Every Markdown page under `dir` (folders below too), absolute paths. The directory is the
 * generator's: a page there that it did not write now is stale, whatever it holds — a marker line
 * can be edited away, so it decides nothing.
 */
async function markdownPages(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => (e.isFile() || e.isSymbolicLink()) && e.name.toLowerCase().endsWith(".md")).map((e) => join(e.parentPath, e.name));
}

/**
 * Render one page per family into `out`. With `check`, write nothing and fail when a page differs,
 * is missing, or is stale: a Markdown page under `out` for a family the composition no longer has.
 * Writing names stale pages too (on stderr) but leaves them for the operator to delete.
 */
export async function docsCommand(runtime: Runtime, options: DocsOptions, io: Io): Promise<number> {
  const pages = renderOperatorDocs(buildInventory(runtime.registry, { profiles: runtime.profiles }));
  const dir = resolve(runtime.baseDir, options.out);
  const wanted = new Map(pages.map((p) => [join(dir, p.path.replace(/^tools\//, "")), p.content]));
  const stale = (await markdownPages(dir)).filter((path) => !wanted.has(path)).map((path) => `stale: ${path}`);
  if (!options.check) {
    await mkdir(dir, { recursive: true });
    const bar = progress(io, "pages written");
    let done = 0;
    for (const [path, content] of wanted) {
      await writeFile(path, content);
      bar.update(++done, wanted.size);
    }
    bar.end();
    io.out(`wrote ${wanted.size} page${wanted.size === 1 ? "" : "s"} to ${options.out}`);
    for (const line of stale) io.err(`${line} (no family of this composition; delete it)`);
    return EXIT.ok;
  }
  const drift: string[] = [];
  for (const [path, content] of wanted) {
    const current = existsSync(path) ? await readFile(path, "utf8") : undefined;
    if (current === undefined) drift.push(`missing: ${path}`);
    else if (current !== content) drift.push(`differs: ${path}`);
  }
  drift.push(...stale);
  if (drift.length > 0) {
    for (const line of drift) io.err(line);
    throw new CliFailure(
      `${drift.length} operator doc page${drift.length === 1 ? "" : "s"} out of date`,
      EXIT.failed,
      stale.length > 0
        ? `delete the stale pages, run toolgate docs --out ${options.out} and commit the pages`
        : `run toolgate docs --out ${options.out} and commit the pages`,
    );
  }
  io.out(`${wanted.size} page${wanted.size === 1 ? "" : "s"} up to date`);
  return EXIT.ok;
}
