/**
 * The approval authority across real processes sharing one journal (a SQLite file in the state
 * directory, or a PostgreSQL schema): the built `toolgate` binary, and a long-running worker (the
 * built package) that opened the journal before the operator acted.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempProject, toolgateProcess } from "./fixtures/temp-project.js";

const pgUrl = process.env["TOOLGATE_PG_URL"] ?? "";
/** PostgreSQL runs where scripts/postgres.sh gave this process a server; under CI a missing one fails instead of skipping. */
const stores = [
  { name: "SQLite", skip: false },
  { name: "PostgreSQL", skip: pgUrl === "" && ["", "0", "false"].includes(process.env["CI"] ?? "") },
] as const;

let dir: string;
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill();
});

/** The temp project, its journal on this store (PostgreSQL: a schema of its own). */
function project(store: (typeof stores)[number]["name"]): string {
  const made = tempProject("toolgate-authority-procs-");
  if (store === "PostgreSQL") {
    const config = join(made, "toolgate.config.mjs");
    const journal = `journal: { postgres: ${JSON.stringify(pgUrl)}, schema: "cli_${randomBytes(6).toString("hex")}" },`;
    const text = readFileSync(config, "utf8");
    expect(text).toContain('journal: { sqlite: ".toolgate/journal.db" },');
    writeFileSync(config, text.replace('journal: { sqlite: ".toolgate/journal.db" },', journal));
  }
  return made;
}

/** The CLI in its own process, in the temp project. */
const toolgate = (...args: string[]) => toolgateProcess(dir, ...args);

/** Every audit event of the journal, exported by another process. */
async function auditEvents(): Promise<{ type: string; toolId?: string }[]> {
  const exported = await toolgate("audit", "export");
  expect(exported.code, exported.stderr).toBe(0);
  return exported.stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as { type: string; toolId?: string });
}

/** A worker process: opens the runtime once, then makes one call per line it reads, answering with the result's status and code. */
function startWorker(): { call(text: string): Promise<{ status: string; code?: string }> } {
  const script = join(dir, "worker.mjs");
  writeFileSync(
    script,
    `import { createInterface } from "node:readline";
import { openRuntime } from "@toolgate/cli";
const runtime = await openRuntime({ cwd: process.cwd() });
const profile = runtime.profile("reader");
process.stdout.write("ready\\n");
for await (const line of createInterface({ input: process.stdin })) {
  const r = await runtime.gate.invoke("notes.count_words", { text: line }, { principal: "worker", tenant: "default", profile });
  process.stdout.write(JSON.stringify({ status: r.status, code: r.code }) + "\\n");
}
await runtime.close();
`,
  );
  const child = spawn(process.execPath, [script], { cwd: dir, env: { PATH: process.env["PATH"] ?? "" } });
  children.push(child);
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error("the worker ended");
    return value as string;
  };
  const ready = next();
  return {
    async call(text) {
      expect(await ready).toBe("ready");
      child.stdin.write(`${text}\n`);
      return JSON.parse(await next()) as { status: string; code?: string };
    },
  };
}

for (const store of stores)
  describe.skipIf(store.skip)(`across processes sharing one ${store.name} journal`, () => {
    beforeEach(() => {
      dir = project(store.name);
    });

    it("a kill switch set by one CLI process refuses the next call of a worker already running, and of another CLI process; off lets both run", async () => {
      const worker = startWorker();
      expect(await worker.call("one two")).toEqual({ status: "ok" });
      const on = await toolgate("kill-switch", "on", "notes.count_words", "--reason", "counts wrong");
      expect(on.code, on.stderr).toBe(0);
      expect(await worker.call("one two")).toEqual({ status: "denied", code: "tool_disabled" });
      const cli = await toolgate("call", "notes.count_words", "--input", '{"text":"a"}', "--profile", "reader");
      expect(cli.code).toBe(1);
      expect(cli.stdout).toContain("tool_disabled");
      expect((await toolgate("kill-switch", "off", "notes.count_words")).code).toBe(0);
      expect(await worker.call("one two")).toEqual({ status: "ok" });
      expect((await toolgate("call", "notes.count_words", "--input", '{"text":"a"}', "--profile", "reader")).code).toBe(0);
    });

    it("approved in one process, the call retried by two processes at once runs exactly once", async () => {
      const args = ["call", "notes.save_note", "--input", '{"name":"todo","text":"buy milk"}', "--profile", "writer"];
      const asked = await toolgate(...args);
      expect(asked.code).toBe(4);
      const id = /request (apr_[0-9a-f-]+)/.exec(asked.stdout)![1]!;
      const approved = await toolgate("approvals", "approve", id);
      expect(approved.code, approved.stderr).toBe(0);
      const retries = await Promise.all([toolgate(...args), toolgate(...args)]);
      // One ran it; the other got its recorded result (the same call, the same derived key), asks anew,
      // or — while the first is still running under that key — is told so (idempotency_in_flight).
      const ran = retries.filter((r) => r.code === 0 && !r.stdout.includes("replayed"));
      expect(ran, JSON.stringify(retries)).toHaveLength(1);
      const stillRunning = (r: { code: number | null; stdout: string }) => r.code === 1 && r.stdout.includes("idempotency_in_flight");
      for (const r of retries) expect(r.code === 0 || r.code === 4 || stillRunning(r), r.stdout + r.stderr).toBe(true);
      const events = await auditEvents();
      expect(events.filter((e) => e.type === "intent.recorded" && e.toolId === "notes.save_note")).toHaveLength(1);
      expect(events.filter((e) => e.type === "approval.consumed")).toHaveLength(1);
      expect((await toolgate("approvals", "show", id)).stdout).toMatch(/\(consumed\)/);
    });

    it("two retries with their own idempotency keys, racing after one approval: one runs, the other is not run (asked again or refused)", async () => {
      const args = (key: string) => ["call", "notes.save_note", "--input", '{"name":"race","text":"once"}', "--profile", "writer", "--key", key];
      const asked = await toolgate(...args("first"));
      const id = /request (apr_[0-9a-f-]+)/.exec(asked.stdout)![1]!;
      expect((await toolgate("approvals", "approve", id)).code).toBe(0);
      const retries = await Promise.all([toolgate(...args("a")), toolgate(...args("b"))]);
      expect(retries.map((r) => r.code).sort(), JSON.stringify(retries)).toEqual([0, expect.toSatisfy((code: number) => code === 1 || code === 4)]);
      const events = await auditEvents();
      expect(events.filter((e) => e.type === "intent.recorded" && e.toolId === "notes.save_note")).toHaveLength(1);
    });
  });
