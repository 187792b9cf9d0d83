import { existsSync, linkSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createToolRegistry, type InvokeResult } from "@toolgate/core";
import { protectPath } from "@toolgate/core/boundary";
import { buildInventory } from "@toolgate/core/operator";
import { call, createTempRepo, gateFor, invokeApproved, type TempRepo } from "./fixtures/git-repo.js";
import { createRepoTools, type RepoToolsOptions } from "./index.js";

const node = process.execPath;
const bwrapInstalled = ["/usr/bin/bwrap", "/bin/bwrap"].some((p) => existsSync(p));

let repo: TempRepo;
beforeEach(() => {
  repo = createTempRepo({ "README.md": "hello\n" });
  repo.write(".toolgate/audit.key", "audit-key-in-tree-0123456789abcdef\n");
  repo.write(".env", "API_TOKEN=env-secret-21\n");
  repo.write("state/journal.db", "journal-secret-22\n");
  protectPath(path.join(repo.root, "state"));
});
afterEach(() => repo.remove());

const outputOf = (result: InvokeResult) =>
  result.status === "ok" ? (result.output as { passed: boolean; exitCode: number | null; stdout: string }) : undefined;
const inventoryOf = (options: Partial<RepoToolsOptions>) =>
  buildInventory(
    createToolRegistry({ families: [createRepoTools({ root: repo.root, checks: { pass: { argv: [node, "-e", "0"] } }, ...options })] }),
  ).tools.find((t) => t.id === "repo.check")!;

describe.skipIf(!bwrapInstalled && process.env["CI"] === undefined)("repo.check is contained by default", { timeout: 60_000 }, () => {
  it("a check that writes outside the root is stopped, and one declared to write only changes a scratch copy", async () => {
    const outsideFile = path.join(repo.outside, "written-by-check.txt");
    const write = (file: string) =>
      `try { require("fs").writeFileSync(${JSON.stringify(file)}, "x"); console.log("wrote"); } catch (e) { console.log(e.code); process.exit(9); }`;
    const gate = gateFor(repo, {
      checks: {
        escape: { argv: [node, "-e", write(outsideFile)] },
        inroot: { argv: [node, "-e", write("built.txt")] },
        scratch: { argv: [node, "-e", write("built.txt")], sandbox: { write: true } },
      },
    });
    const escaped = outputOf(await invokeApproved(gate, "repo.check", { check: "escape" }));
    expect(escaped).toMatchObject({ passed: false, exitCode: 9 });
    expect(existsSync(outsideFile)).toBe(false);
    expect(outputOf(await invokeApproved(gate, "repo.check", { check: "inroot" }))).toMatchObject({ passed: false, stdout: "EROFS\n" });
    expect(outputOf(await invokeApproved(gate, "repo.check", { check: "scratch" }))).toMatchObject({ passed: true, stdout: "wrote\n" });
    expect(existsSync(path.join(repo.root, "built.txt"))).toBe(false);
  });

  it("a writing check links the directories it names read-only instead of copying them, hiding what is denied inside", async () => {
    repo.write("deps/lib.txt", "library\n");
    repo.write("deps/.env", "API_TOKEN=dep-secret-23\n");
    const probe = [
      `const fs = require("fs");`,
      `const tryIt = (f) => { try { return f(); } catch (e) { return e.code; } };`,
      `fs.writeFileSync("built.txt", "x");`,
      `console.log(JSON.stringify([tryIt(() => fs.readFileSync("deps/lib.txt", "utf8")), tryIt(() => fs.writeFileSync("deps/new.txt", "x")), tryIt(() => fs.readFileSync("deps/.env", "utf8")), fs.lstatSync("deps").isSymbolicLink()]));`,
    ].join("\n");
    const gate = gateFor(repo, { checks: { build: { argv: [node, "-e", probe], sandbox: { write: true, linkReadOnly: ["deps/"] } } } });
    const seen = JSON.parse(outputOf(await invokeApproved(gate, "repo.check", { check: "build" }))!.stdout) as unknown[];
    expect(seen[0]).toBe("library\n");
    expect(seen[1]).toBe("EROFS");
    expect(seen[2]).toMatch(/^E[A-Z]+$/);
    expect(seen[3]).toBe(true);
    expect(existsSync(path.join(repo.root, "deps", "new.txt"))).toBe(false);
    expect(existsSync(path.join(repo.root, "built.txt"))).toBe(false);
    for (const bad of [[".toolgate"], ["../outside"], ["/etc"], [".git"]])
      expect(() => gateFor(repo, { checks: { build: { argv: [node], sandbox: { write: true, linkReadOnly: bad } } } }), bad[0]).toThrow(
        expect.objectContaining({ code: "config_invalid" }),
      );
  });

  it("a check that reaches a loopback listener is stopped (no network)", async () => {
    const requests: string[] = [];
    const server = createServer((request, response) => {
      requests.push(request.url ?? "");
      response.end("reached");
    });
    const port = await new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)));
    const probe = `fetch("http://127.0.0.1:${port}/from-check").then(async (r) => console.log(await r.text()), (e) => { console.log("blocked " + (e.cause?.code ?? e.message)); process.exitCode = 7; });`;
    const declared = { checks: { probe: { argv: [node, "-e", probe] as [string, ...string[]] } } };
    try {
      const result = outputOf(await invokeApproved(gateFor(repo, declared), "repo.check", { check: "probe" }));
      expect(result).toMatchObject({ passed: false, exitCode: 7 });
      expect(result?.stdout).toMatch(/^blocked /);
      expect(requests).toEqual([]);
      // The same check with the sandbox switched off by the operator does get through: the listener is real.
      const open = outputOf(await invokeApproved(gateFor(repo, { ...declared, checkSandbox: "none" }), "repo.check", { check: "probe" }));
      expect(open?.stdout).toBe("reached\n");
      expect(requests).toEqual(["/from-check"]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("a check cannot read the gate's state or denied files in the tree, in place or in its scratch copy", async () => {
    const look = `const fs = require("fs"); const seen = (p) => { try { return fs.readFileSync(p, "utf8"); } catch (e) { return e.code; } }; console.log(JSON.stringify([seen(".toolgate/audit.key"), seen(".env"), seen("state/journal.db"), seen(".git/config"), seen("README.md")]));`;
    const gate = gateFor(repo, { checks: { look: { argv: [node, "-e", look] }, lookw: { argv: [node, "-e", look], sandbox: { write: true } } } });
    const inPlace = JSON.parse(outputOf(await invokeApproved(gate, "repo.check", { check: "look" }))!.stdout) as string[];
    expect(inPlace.slice(0, 4).every((seen) => /^E[A-Z]+$/.test(seen) || seen === "")).toBe(true);
    expect(inPlace[4]).toBe("hello\n");
    const scratch = JSON.parse(outputOf(await invokeApproved(gate, "repo.check", { check: "lookw" }))!.stdout) as string[];
    expect(scratch).toEqual(["ENOENT", "ENOENT", "ENOENT", "ENOENT", "hello\n"]);
    expect(readFileSync(path.join(repo.root, ".env"), "utf8")).toBe("API_TOKEN=env-secret-21\n");
  });

  it("a hard link planted in the tree to the gate's state is hidden from a check, in place and in its scratch copy", async () => {
    const state = path.join(repo.base, "state-outside");
    mkdirSync(state);
    writeFileSync(path.join(state, "audit.key"), "audit-key-outside-0123456789abcdef\n");
    protectPath(state);
    linkSync(path.join(state, "audit.key"), path.join(repo.root, "notes.txt"));
    linkSync(path.join(repo.root, "state", "journal.db"), path.join(repo.root, "copy.db"));
    const look = `const fs = require("fs"); const seen = (p) => { try { return fs.readFileSync(p, "utf8"); } catch (e) { return e.code; } }; console.log(JSON.stringify([seen("notes.txt"), seen("copy.db")]));`;
    const gate = gateFor(repo, { checks: { look: { argv: [node, "-e", look] }, lookw: { argv: [node, "-e", look], sandbox: { write: true } } } });
    for (const check of ["look", "lookw"]) {
      const stdout = outputOf(await invokeApproved(gate, "repo.check", { check }))!.stdout;
      expect(stdout, check).not.toContain("audit-key-outside");
      expect(stdout, check).not.toContain("journal-secret-22");
    }
  });

  it("needs a human's approval unless the operator opts the named check out; the preview shows argv and containment", async () => {
    const gate = gateFor(repo, { checks: { tests: { argv: [node, "-e", "0"] }, syntax: { argv: [node, "-e", "0"], approval: "none" } } });
    const asked = await gate.invoke("repo.check", { check: "tests" }, call());
    expect(asked.status).toBe("approval_required");
    expect(asked.status === "approval_required" && asked.preview.details).toMatchObject({
      check: "tests",
      argv: [node, "-e", "0"],
      network: "none",
      writes: "nothing",
    });
    expect((await gate.invoke("repo.check", { check: "syntax" }, call())).status).toBe("ok");
    expect(() => createRepoTools({ root: repo.root, checks: { x: { argv: ["true"], approval: "never" as "none" } } })).toThrow(
      expect.objectContaining({ code: "config_invalid" }),
    );
  });

  it("a check that hits a sandbox limit fails with limit_exceeded; a writing one leaves the tree as it was", async () => {
    const big = `exec head -c ${256 * 1024} /dev/zero > big.bin`;
    const gate = gateFor(repo, {
      checks: {
        inplace: { argv: ["/bin/sh", "-c", big.replace("big.bin", "/tmp/big.bin")] },
        scratch: { argv: ["/bin/sh", "-c", big], sandbox: { write: true } },
      },
      checkSandbox: { kind: "bubblewrap", limits: { fileBytes: 64 * 1024 } },
    });
    for (const check of ["inplace", "scratch"]) {
      const result = await invokeApproved(gate, "repo.check", { check });
      expect(result, check).toMatchObject({ status: "error", code: "limit_exceeded", details: { limit: "fileBytes", value: 64 * 1024 } });
      // The scratch copy it wrote to is gone with its run: nothing changed.
      expect(result.status === "error" && result.boundary, check).toBe("effect_failed");
    }
    expect(existsSync(path.join(repo.root, "big.bin"))).toBe(false);
    const inventory = inventoryOf({ checkSandbox: { kind: "bubblewrap", limits: { fileBytes: 64 * 1024 } } });
    expect(inventory.runtimeIsolation.notes).toContain("files up to 65536 bytes");
  });

  it("reports in the inventory the isolation it enforces, and no more", () => {
    const contained = inventoryOf({});
    expect(contained.runtimeIsolation).toMatchObject({ network: "none", filesystem: "read-root" });
    expect(contained.runtimeIsolation.notes).toContain("bubblewrap");
    // Computed from the sandbox as built: what it drops, filters and bounds.
    expect(contained.runtimeIsolation.notes).toMatch(/no capabilities, seccomp filter/);
    expect(contained.runtimeIsolation.notes).toContain("CPU 600 s");
    expect(contained.runtimeIsolation.notes).toContain(`output ${64 * 1024} bytes`);
    expect(contained.approval).toBe("conditional");
    expect(contained.risk).toBe("medium");
    const writing = inventoryOf({ checks: { build: { argv: [node, "-e", "0"], sandbox: { write: true } } } });
    expect(writing.runtimeIsolation.filesystem).toBe("scratch-copy");
    const open = inventoryOf({ checkSandbox: "none" });
    expect(open.runtimeIsolation).toMatchObject({ network: "host", filesystem: "host" });
    expect(open.risk).toBe("high");
    const onGate = inventoryOf({ checks: ["lint"] });
    expect(onGate.runtimeIsolation).toMatchObject({ network: "host", filesystem: "host" });
  });
});

describe("repo.check without bubblewrap", () => {
  it("refuses every run unless the operator explicitly set sandbox none, and says so in the inventory", async () => {
    const marker = path.join(repo.outside, "ran.txt");
    const checks = { touch: { argv: [node, "-e", `require("fs").writeFileSync(${JSON.stringify(marker)}, "x")`] as [string, ...string[]] } };
    const absent = { kind: "auto", bwrapPath: path.join(repo.base, "no-bwrap-here") } as const;
    const gate = gateFor(repo, { checks, checkSandbox: absent });
    const refused = await invokeApproved(gate, "repo.check", { check: "touch" });
    expect(refused.status === "error" && [refused.code, refused.details?.["reason"]]).toEqual(["command_denied", "no_sandbox"]);
    expect(existsSync(marker)).toBe(false);
    const reported = inventoryOf({ checks, checkSandbox: absent }).runtimeIsolation;
    expect(reported).toMatchObject({ network: "none", filesystem: "none", subprocess: "none" });
    expect(reported.notes).toContain("not installed");
    const explicit = gateFor(repo, { checks, checkSandbox: "none" });
    expect((await invokeApproved(explicit, "repo.check", { check: "touch" })).status).toBe("ok");
    expect(existsSync(marker)).toBe(true);
  });
});
