// The docs' shell commands work verbatim with the shipped composition file: every command block
// of docs/operating.md and docs/writing-a-tool-process.md marked `<!-- run -->` is run, in order,
// against the built CLI, in a copy of the repository root after the quick start; each line exits
// as it says (`# exit N`, else 0) and the block prints what its marker expects. A command block
// that is not marked must be listed below with the reason it cannot run here.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blocksOf, builtCli, expectedExit, keyOf, quickStartCopy, runBlock, SHELL, type Block } from "./harness.js";

const DOCS = ["docs/operating.md", "docs/writing-a-tool-process.md"];

/** Command blocks that are not run, and why: each needs a person, a browser, another host, or a state a test cannot make here. */
const NOT_RUN: Record<string, string> = {
  "docs/operating.md: npx toolgate console            # http://127.0.0.1:7878/ (--port N, or console.port in the composition file)":
    "serves the console until stopped, for a person with a browser (tests/src/console drives it in Chromium)",
  "docs/operating.md: npx toolgate serve-mcp --http 8765                          # serves until stopped":
    "a server that runs until stopped, for an MCP client (the CLI's serve-mcp tests connect one)",
  "docs/operating.md: */10 * * * * cd /srv/agent && npx toolgate audit head >> /mnt/audit-log/heads.log":
    "a crontab line for the operator's host, writing to another host's mount (the block after it runs the same with a local file)",
  'docs/operating.md: npx toolgate audit verify --expected-head "$(tail -n 1 /mnt/audit-log/heads.log)"':
    "reads /mnt/audit-log on another host (the block after it runs the same with a local file)",
  "docs/operating.md: npx toolgate audit verify --witness /mnt/audit-log/audit.witness":
    "needs a witness on another disk named in the composition file (packages/cli's witness tests run it)",
  'docs/operating.md: npx toolgate outbox resolve KEY --applied --note "checked the sent folder"':
    "needs an entry a crash left unknown, named by its key (packages/cli and tests/src/console resolve real ones)",
  "docs/operating.md: npx toolgate approvals show apr_…                              # editable fields, the input as asked":
    "needs a pending request whose tool lets an approver edit it; the shipped composition's only such call without a connection is repo.check, whose one field has one value (packages/cli's approvals-edit tests run these commands against a real journal)",
  "docs/operating.md: npx toolgate connections connect google --default":
    "needs a person at a browser and a provider's OAuth client (tests/src/connect runs the flow against the emulators in Chromium)",
};

/** The user's own file from their provider that the vault block imports: an OAuth token response. */
const TOKEN_JSON = {
  access_token: "ya29.docs-commands-not-a-real-token",
  refresh_token: "1//docs-commands-not-a-real-refresh",
  expires_in: 3599,
  token_type: "Bearer",
  scope: "https://www.googleapis.com/auth/gmail.readonly https://www.googleapis.com/auth/calendar.readonly",
};

const blocks = DOCS.flatMap(blocksOf);
const commandBlocks = blocks.filter((b) => SHELL.has(b.lang));

describe("the docs' command blocks are each run or listed with a reason", () => {
  it("finds the marked blocks of both documents", () => {
    for (const doc of DOCS) expect(commandBlocks.filter((b) => b.doc === doc && b.run).length, doc).toBeGreaterThan(0);
  });

  it("every command block is marked <!-- run --> or listed in NOT_RUN, and every listed one still exists unmarked", () => {
    const unmarked = commandBlocks.filter((b) => !b.run).map(keyOf);
    expect(unmarked.filter((k) => !(k in NOT_RUN))).toEqual([]);
    expect(Object.keys(NOT_RUN).filter((k) => !unmarked.includes(k))).toEqual([]);
  });
});

for (const doc of DOCS) {
  describe(`${doc}: the marked commands run verbatim with the shipped composition file`, () => {
    let dir: string;
    let env: Record<string, string>;
    const seen: { requestId?: string } = {};
    beforeAll(() => {
      if (!existsSync(builtCli)) throw new Error(`${builtCli} is missing: build the CLI first (npx turbo run build --filter=@toolgate/cli...)`);
      ({ dir, env } = quickStartCopy("toolgate-docs-commands-"));
      writeFileSync(join(dir, "token.json"), JSON.stringify(TOKEN_JSON));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const marked = blocks.filter((b): b is Block => b.doc === doc && b.run);
    for (const [i, block] of marked.entries()) {
      it(`block ${i + 1}: ${block.lines[0]}`, { timeout: 600_000 }, () => {
        const ran = runBlock(block, dir, env, seen);
        expect(ran.length).toBeGreaterThan(0);
        for (const r of ran) {
          expect(r.code, `${r.line}\n${r.output}`).toBe(expectedExit(r.line));
          expect(r.output, `${r.line}: a stack trace`).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
        }
        const output = ran.map((r) => r.output).join("\n");
        for (const text of block.expects) expect(output, `${block.lines[0]}: expected ${JSON.stringify(text)}`).toContain(text);
        // The vault block's key and tokens are secrets: no command prints them.
        for (const secret of [TOKEN_JSON.access_token, TOKEN_JSON.refresh_token]) expect(output).not.toContain(secret);
      });
    }
  });
}
