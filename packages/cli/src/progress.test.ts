import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createGate, createToolRegistry, defineFamily, defineProfile, defineTool } from "@toolgate/core";
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { describe, expect, it } from "vitest";
import { notesConfig, tempProject } from "./fixtures/temp-project.js";
import { progress } from "./progress.js";

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The real binary under a pseudo-terminal (`script`): what the terminal showed, stdout and stderr together. */
function onTerminal(dir: string, ...args: string[]): { code: number; screen: string } {
  const command = [process.execPath, bin, ...args].map(quote).join(" ");
  const r = spawnSync("script", ["-qefc", command, "/dev/null"], { cwd: dir, encoding: "utf8", env: { PATH: process.env["PATH"] ?? "", TERM: "dumb" } });
  return { code: r.status ?? -1, screen: r.stdout };
}
/** The same, piped: stdout and stderr are pipes, as in CI. */
function piped(dir: string, ...args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: dir, encoding: "utf8", env: { PATH: process.env["PATH"] ?? "" } });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe("progress(): a terminal's line, nothing elsewhere", () => {
  it("writes nothing when stderr is not a terminal", () => {
    const written: string[] = [];
    const bar = progress({ out() {}, err() {}, interactive: false }, "pages written", { write: (t) => written.push(t) });
    bar.update(1, 3);
    bar.update(3, 3);
    bar.end();
    expect(written).toEqual([]);
  });

  it("on a terminal shows the first and the last count (n/N) whatever the interval, then clears its line", () => {
    const written: string[] = [];
    const bar = progress({ out() {}, err() {}, interactive: true }, "pages written", { write: (t) => written.push(t), intervalMs: 60_000 });
    bar.update(1, 3);
    bar.update(2, 3); // within the interval: skipped
    bar.update(3, 3);
    bar.end();
    expect(written).toEqual(["\rpages written 1/3\x1b[K", "\rpages written 3/3\x1b[K", "\r\x1b[K"]);
  });

  it("a count past its total raises the total; no total shows the count alone; end without a line writes nothing", () => {
    const written: string[] = [];
    const bar = progress({ out() {}, err() {}, interactive: true }, "entries", { write: (t) => written.push(t), intervalMs: 0 });
    bar.end();
    bar.update(4, 3);
    bar.update(5);
    expect(written).toEqual(["\rentries 4/4\x1b[K", "\rentries 5\x1b[K"]);
  });
});

describe("long CLI steps show progress on a terminal only (the real binary, under script(1) and piped)", () => {
  it("toolgate docs: pages written n/N on a terminal; piped, only its one line of output", () => {
    const dir = tempProject("toolgate-progress-");
    const tty = onTerminal(dir, "docs");
    expect(tty.code).toBe(0);
    expect(tty.screen).toContain("pages written 1/1");
    expect(tty.screen).toContain("wrote 1 page to docs/tools");
    const pipe = piped(dir, "docs");
    expect(pipe.code).toBe(0);
    expect(pipe.stdout).toBe("wrote 1 page to docs/tools\n");
    expect(pipe.stderr).toBe("");
  });

  it("toolgate outbox recover: entries n/N on a terminal; piped, no progress", async () => {
    const dir = tempProject("toolgate-progress-");
    expect(piped(dir, "outbox", "list").code).toBe(0); // creates the journal and the audit key
    // A worker that crashed mid-call: three reads recorded their intents and never settled.
    const journal = await openSqliteJournal(join(dir, ".toolgate", "journal.db"), {
      auditKey: Buffer.from(readFileSync(join(dir, ".toolgate", "audit.key"), "utf8").trim()),
    });
    // The notes family's word count, made a read whose body never answers: the worker dies first.
    const config = (await import(notesConfig)) as { default: { compose(): { families: { tools: readonly Parameters<typeof defineTool>[0][] }[] } } };
    const base = config.default.compose().families[0]!.tools.find((t) => t.id === "notes.count_words")!;
    const hang = defineTool({ ...base, effect: "read", handler: () => new Promise<never>(() => {}) });
    const gate = createGate({
      registry: createToolRegistry({ families: [defineFamily({ name: "notes", tools: [hang], permissions: ["notes:read"] })] }),
      journal,
    });
    const profile = defineProfile({ name: "reader", allow: ["notes:read"], maxRisk: "low" });
    for (const text of ["a", "b c", "d e f"]) void gate.invoke("notes.count_words", { text }, { principal: "p", tenant: "t", profile });
    for (let i = 0; i < 1000 && (await journal.listOutbox({ states: ["pending"] })).length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await journal.listOutbox({ states: ["pending"] })).toHaveLength(3);
    await journal.close();

    const tty = onTerminal(dir, "outbox", "recover", "--older-than", "0s");
    expect(tty.screen).toContain("outbox entries recovered 0/3");
    expect(tty.screen).toContain("outbox entries recovered 3/3");
    expect(tty.screen).toContain("claimed 3");
    const pipe = piped(dir, "outbox", "recover", "--older-than", "0s");
    expect(pipe.stdout).toContain("claimed 0");
    expect(pipe.stderr).not.toContain("recovered");
    expect(pipe.stdout + pipe.stderr).not.toContain("\r");
  });
});
