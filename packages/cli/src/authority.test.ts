/**
 * The owner's side of the approval authority in the CLI: operators, kill switches, approvals
 * decided as the owner. In-process runs of the CLI against real temp projects (SQLite files);
 * authority/processes.test.ts runs the real binary across processes.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { runIn, tempProject } from "./fixtures/temp-project.js";
import { openRuntime } from "./runtime.js";

let dir: string;
beforeEach(() => {
  dir = tempProject("toolgate-authority-");
});

const toolgate = (...args: string[]) => runIn(dir, ...args);
const LINK = /http:\/\/127\.0\.0\.1:(\d+)\/login\?token=(tgl_[A-Za-z0-9_-]{43})/;

/** What a console worker on the same journal would do with a login token: spend it for a session. */
async function signIn(token: string) {
  const runtime = await openRuntime({ cwd: dir });
  try {
    return await runtime.gate.authority.login(token);
  } finally {
    await runtime.close();
  }
}

async function added(name: string, ...flags: string[]): Promise<{ token: string; port: string; stdout: string }> {
  const r = await toolgate("operators", "add", name, ...flags);
  expect(r.code, r.stderr).toBe(0);
  const [, port, token] = LINK.exec(r.stdout)!;
  return { token: token!, port: port!, stdout: r.stdout };
}

describe("toolgate operators: refusals first", () => {
  it("a bad or missing role is a usage error (2) with a hint naming the roles and an example", async () => {
    for (const flags of [["--role", "superuser"], [], ["--role", "Admin"]]) {
      const r = await toolgate("operators", "add", "alice", ...flags);
      expect(r.code, flags.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/--role/);
      expect(r.stderr).toMatch(/^hint: .*toolgate operators add alice --role approver/m);
    }
    expect((await toolgate("operators", "list")).stdout).toContain("no operators yet");
  });

  it("a scope naming nothing in the composition, a bad risk, a scoped viewer or a bad port is a usage error naming what exists", async () => {
    const unknownTool = await toolgate("operators", "add", "alice", "--role", "approver", "--tools", "notes.save_notes");
    expect(unknownTool.code).toBe(2);
    expect(unknownTool.stderr).toContain('"notes.save_notes" names no tool or family');
    expect(unknownTool.stderr).toMatch(/^hint: families: notes .*tools: notes\.count_words, notes\.save_note/m);
    expect((await toolgate("operators", "add", "alice", "--role", "approver", "--tools", "mail.*")).code).toBe(2);
    expect((await toolgate("operators", "add", "alice", "--role", "approver", "--tools", "notes.*,")).code).toBe(2);
    expect((await toolgate("operators", "add", "alice", "--role", "approver", "--max-risk", "extreme")).stderr).toContain("--max-risk must be one of");
    const viewer = await toolgate("operators", "add", "alice", "--role", "viewer", "--tenants", "acme");
    expect(viewer.code).toBe(2);
    expect(viewer.stderr).toContain("use --role approver");
    for (const port of ["0", "70000", "80x"]) expect((await toolgate("operators", "add", "alice", "--role", "viewer", "--port", port)).code, port).toBe(2);
    expect((await toolgate("operators", "list")).stdout).toContain("no operators yet");
  });

  it("a name that is not a short name, or one taken, is refused with what to do", async () => {
    expect((await toolgate("operators", "add", "owner", "--role", "admin")).code).toBe(2);
    expect((await toolgate("operators", "add", "a b", "--role", "admin")).code).toBe(2);
    await added("alice", "--role", "approver");
    const again = await toolgate("operators", "add", "alice", "--role", "admin");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("hint: toolgate operators login alice");
  });

  it("a disabled or removed operator's login link no longer works; an unknown one is named with the command that lists them", async () => {
    const alice = await added("alice", "--role", "approver");
    expect((await toolgate("operators", "disable", "alice")).stdout).toContain("disabled alice");
    expect(await signIn(alice.token)).toBeUndefined();
    const bob = await added("bob", "--role", "viewer");
    expect((await toolgate("operators", "remove", "bob")).code).toBe(0);
    expect(await signIn(bob.token)).toBeUndefined();
    const relink = await toolgate("operators", "login", "bob");
    expect(relink.code).toBe(1);
    expect(relink.stdout).not.toMatch(LINK);
    expect(relink.stderr).toMatch(/^hint: toolgate operators/m);
    const missing = await toolgate("operators", "disable", "carol");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("toolgate: no operator carol\nhint: toolgate operators list shows them");
    // Enabled again, a fresh link works once; the old one stays spent for good.
    expect((await toolgate("operators", "enable", "alice")).code).toBe(0);
    expect(await signIn(alice.token)).toBeUndefined();
    const fresh = LINK.exec((await toolgate("operators", "login", "alice")).stdout)![2]!;
    const session = await signIn(fresh);
    expect(session?.approver).toMatchObject({ name: "alice", role: "approver", via: "session" });
    expect(await signIn(fresh)).toBeUndefined();
  });
});

describe("toolgate operators", () => {
  it("add prints a one-time link for the console's port (7878, --port, or console.port) and how long it lasts; list shows id, name, role, scope, status", async () => {
    const alice = await added("alice", "--role", "approver", "--tools", "notes.*,notes.count_words", "--max-risk", "medium", "--tenants", "acme, beta");
    expect(alice.port).toBe("7878");
    expect(alice.stdout).toMatch(/^added approver alice \(op_[0-9a-f]+\), scope tools notes\.\*,notes\.count_words; risk ≤ medium; tenants acme,beta$/m);
    expect(alice.stdout).toMatch(/works once, for 15 minutes, until \d{4}-\d\d-\d\dT/);
    expect(alice.stdout).toContain(`token ${alice.token}`);
    expect((await added("root", "--role", "admin", "--port", "9123")).port).toBe("9123");

    const list = await toolgate("operators", "list");
    expect(list.stdout.split("\n")[0]).toMatch(/^id\s+name\s+role\s+scope\s+status$/);
    expect(list.stdout).toMatch(/op_[0-9a-f]+\s+alice\s+approver\s+tools notes\.\*,notes\.count_words; risk ≤ medium; tenants acme,beta\s+active/);
    expect(list.stdout).not.toContain("tgl_");
    const json = JSON.parse((await toolgate("operators", "list", "--json")).stdout) as { name: string; createdBy: string }[];
    expect(json.map((o) => [o.name, o.createdBy])).toEqual([
      ["alice", "owner"],
      ["root", "owner"],
    ]);
    // The token itself is kept nowhere: not in the journal's audit events.
    expect((await toolgate("audit", "tail", "--json")).stdout).not.toContain(alice.token);
  });
});

describe("toolgate operators with console.port in the composition", () => {
  it("links point at the configured console port", async () => {
    // Before the first run: an imported composition file is cached by its URL.
    const config = join(dir, "toolgate.config.mjs");
    writeFileSync(config, readFileSync(config, "utf8").replace('state: ".toolgate",', 'state: ".toolgate", console: { port: 9555 },'));
    const alice = await added("alice", "--role", "viewer");
    expect(alice.port).toBe("9555");
    expect(alice.stdout).toContain("toolgate console --port 9555");
  });
});

describe("toolgate kill-switch", () => {
  const count = () => toolgate("call", "notes.count_words", "--input", '{"text":"a b"}', "--profile", "reader");

  it("a target naming nothing in the composition, or no reason, is a usage error naming what exists", async () => {
    const r = await toolgate("kill-switch", "on", "notes.count_wordz", "--reason", "typo");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('"notes.count_wordz" names no tool or family in the composition');
    expect(r.stderr).toMatch(/^hint: families: notes \(family:<name> or <name>\.\*\); tools: notes\.count_words, notes\.save_note$/m);
    for (const target of ["family:mail", "mail.*", "tool:", "*"]) expect((await toolgate("kill-switch", "on", target, "--reason", "x")).code, target).toBe(2);
    const noReason = await toolgate("kill-switch", "on", "notes.count_words");
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain("hint: e.g. toolgate kill-switch on notes.count_words --reason");
    expect((await toolgate("kill-switch", "list")).stdout).toBe("no kill switch is on");
    expect((await count()).code).toBe(0);
  });

  it("on: the next call is refused with the typed tool_disabled refusal and what to do; off: it runs again", async () => {
    const on = await toolgate("kill-switch", "on", "notes.count_words", "--reason", "counts wrong");
    expect(on.code, on.stderr).toBe(0);
    expect(on.stdout).toContain("kill switch on: tool:notes.count_words (counts wrong), by owner");
    const refused = await count();
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^denied: tool_disabled — /);
    expect(refused.stdout).toContain("pre effect refusal");
    expect(refused.stdout).toContain(
      "hint: an operator stopped it: toolgate kill-switch list shows why; toolgate kill-switch off tool:notes.count_words turns it back on",
    );
    expect((await toolgate("kill-switch", "list")).stdout).toMatch(/tool:notes\.count_words\s+counts wrong\s+owner/);
    expect((await toolgate("audit", "tail", "--json")).stdout).toContain("tool_disabled");
    expect((await toolgate("kill-switch", "off", "tool:notes.count_words")).code).toBe(0);
    expect((await count()).code).toBe(0);
    const again = await toolgate("kill-switch", "off", "notes.count_words");
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^hint: /m);
  });

  it("a reason set elsewhere (an admin in the console) cannot rewrite the owner's terminal: list and the refusal show its controls as markers", async () => {
    const runtime = await openRuntime({ cwd: dir });
    try {
      const authority = runtime.gate.authority;
      await authority.switches.disable("tool:notes.count_words", "ok\u001b[2K\rnothing is switched off", authority.owner());
    } finally {
      await runtime.close();
    }
    const list = await toolgate("kill-switch", "list");
    expect(list.stdout).not.toMatch(/[\u001b\r]/);
    expect(list.stdout).toContain("ok⟨U+001B⟩[2K⟨U+000D⟩nothing is switched off");
    const refused = await count();
    expect(refused.code).toBe(1);
    expect(refused.stdout).not.toMatch(/[\u001b\r]/);
  });

  it("a whole family, as notes.* or family:notes, stops every tool of it", async () => {
    expect((await toolgate("kill-switch", "on", "notes.*", "--reason", "incident 7")).code).toBe(0);
    expect((await count()).stdout).toContain("tool_disabled");
    const save = await toolgate("call", "notes.save_note", "--input", '{"name":"a","text":"b"}', "--profile", "writer");
    expect(save.code).toBe(1);
    expect(save.stdout).toContain("tool_disabled");
    expect(save.stdout).toContain("toolgate kill-switch off family:notes turns it back on");
    expect(JSON.parse((await toolgate("kill-switch", "list", "--json")).stdout)).toMatchObject([{ target: "family:notes", reason: "incident 7", by: "owner" }]);
    expect((await toolgate("kill-switch", "off", "family:notes")).code).toBe(0);
    expect((await count()).code).toBe(0);
  });
});

describe("toolgate approvals, decided as the owner", () => {
  const save = (text: string, ...flags: string[]) =>
    toolgate("call", "notes.save_note", "--input", JSON.stringify({ name: "todo", text }), "--profile", "writer", ...flags);
  const requestOf = (stdout: string) => /request (apr_[0-9a-f-]+)/.exec(stdout)![1]!;

  it("a typed --approver is refused (a name approves nothing), as are an unknown or malformed id and a denial without a reason", async () => {
    const id = requestOf((await save("milk")).stdout);
    const typed = await toolgate("approvals", "approve", id, "--approver", "ops");
    expect(typed.code).toBe(2);
    expect(typed.stderr).toContain("--approver is gone");
    expect(typed.stderr).toMatch(/^hint: .*toolgate operators add NAME --role approver/m);
    expect((await toolgate("approvals", "deny", id, "--approver", "ops", "--reason", "no")).code).toBe(2);
    expect((await toolgate("approvals", "show", id, "--json")).stdout).toContain('"status": "pending"');
    const unknown = await toolgate("approvals", "approve", "apr_00000000-0000-0000-0000-000000000000");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("hint: toolgate approvals list");
    expect((await toolgate("approvals", "approve", "../../etc")).code).toBe(2);
    const bare = await toolgate("approvals", "deny", id);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain(`hint: e.g. toolgate approvals deny ${id} --reason`);
    expect((await toolgate("approvals", "list", "--status", "pending,typo")).code).toBe(2);
    for (const ttl of ["0", "48h", "soon"]) {
      const r = await toolgate("approvals", "approve", id, "--ttl", ttl);
      expect(r.code, ttl).toBe(2);
      expect(r.stderr, ttl).toMatch(/^hint: /m);
    }
    expect((await toolgate("approvals", "show", id, "--json")).stdout).toContain('"status": "pending"');
  });

  it("approve records owner; the retried call runs once, found by its binding; deny records owner and the reason", async () => {
    const asked = await save("milk", "--key", "k1");
    expect(asked.code).toBe(4);
    expect(asked.stdout).toContain("approve: toolgate approvals approve apr_");
    const id = requestOf(asked.stdout);
    // Asked again before anyone decided: the same request, not a second one.
    expect(requestOf((await save("milk")).stdout)).toBe(id);
    const approved = await toolgate("approvals", "approve", id, "--ttl", "5m");
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`^approved ${id} \\(by owner\\) for notes\\.save_note until `));
    expect((await save("milk", "--key", "k1")).code).toBe(0);
    const shown = await toolgate("approvals", "show", id);
    expect(shown.stdout).toMatch(/approved by owner \(owner\) at /);
    expect(shown.stdout).toMatch(/decided {2}(granted|consumed) by owner \(owner\)/);
    // Used: the same call again asks again (with its key, it is the recorded result instead).
    expect((await save("milk")).code).toBe(4);
    expect((await save("milk", "--key", "k1")).stdout).toContain("replayed");
    // A different input never rides on that grant.
    const other = requestOf((await save("evil")).stdout);
    expect(other).not.toBe(id);
    const denied = await toolgate("approvals", "deny", other, "--reason", "not that");
    expect(denied.stdout).toBe(`denied ${other} (by owner): not that`);
    expect((await toolgate("approvals", "show", other)).stdout).toContain("decided  denied by owner (owner)");
    expect((await toolgate("approvals", "approve", other)).code).toBe(1);
    expect((await toolgate("approvals", "list", "--status", "all")).stdout.split("\n")[0]).toMatch(/^request\s+status\s+approvals\s+tool/);
  });

  it("show names the call's callRef (a framework's or client's id for it) and the approvals so far", async () => {
    const runtime = await openRuntime({ cwd: dir });
    let id: string;
    try {
      const result = await runtime.gate.invoke(
        "notes.save_note",
        { name: "ref", text: "from a framework" },
        { principal: "agent", tenant: "default", profile: runtime.profile("writer"), callRef: "call_abc123" },
      );
      expect(result.status).toBe("approval_required");
      id = (result as { requestId: string }).requestId;
    } finally {
      await runtime.close();
    }
    const shown = await toolgate("approvals", "show", id);
    expect(shown.stdout).toMatch(/^callRef {2}call_abc123$/m);
    expect(JSON.parse((await toolgate("approvals", "show", id, "--json")).stdout)).toMatchObject({ callRef: "call_abc123", status: "pending" });
  });

  it("a two-person request: the owner's approval is 1 of 2, the owner again is refused, an approver signed in through the authority completes it", async () => {
    const call = () => toolgate("call", "notes.save_note", "--input", '{"name":"big","text":"all hands"}', "--profile", "careful");
    const id = requestOf((await call()).stdout);
    const first = await toolgate("approvals", "approve", id);
    expect(first.code).toBe(4);
    expect(first.stdout).toContain(`recorded owner's approval of ${id}: 1 of 2; it needs another, different approver`);
    const twice = await toolgate("approvals", "approve", id);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain("needs a second, different approver");
    expect(twice.stderr).toMatch(/^hint: another operator approves it in the console/m);
    // Still waiting: the retry finds the same request, not a grant and not a new request.
    const waiting = await call();
    expect(waiting.code).toBe(4);
    expect(requestOf(waiting.stdout)).toBe(id);
    expect((await toolgate("approvals", "list")).stdout).toMatch(new RegExp(`${id}\\s+pending\\s+1/2`));
    await added("alice", "--role", "approver");
    const runtime = await openRuntime({ cwd: dir });
    try {
      const alice = await runtime.gate.authority.actingAs("alice");
      expect(await runtime.gate.approvals.grant(id, { by: alice })).toMatchObject({ status: "granted" });
    } finally {
      await runtime.close();
    }
    const shown = (await toolgate("approvals", "show", id)).stdout;
    expect(shown).toContain("approvals 2 of 2 (two distinct approvers)");
    expect(shown).toMatch(/approved by owner \(owner\)[^\n]*\n\s+approved by op_[0-9a-f]+ \(host\)/);
    expect((await call()).code).toBe(0);
  });
});
