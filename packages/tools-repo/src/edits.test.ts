/**
 * Approve with edits on the repo family: an approver's edit must not make the desk's preview (run
 * as the caller) read a file the call did not name.
 */
import { askedRequest } from "@toolgate/core/testing";
import { ToolError, type Gate } from "@toolgate/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, createTempRepo, gateFor, type TempRepo } from "./fixtures/git-repo.js";

let repo: TempRepo;
let gate: Gate;
beforeEach(() => {
  repo = createTempRepo({ "README.md": "hello\n", "notes/private.md": "line one\nthe private line\nline three\n" });
  gate = gateFor(repo);
});
afterEach(() => repo.remove());

describe("repo: approve with edits", () => {
  it("an edited patch cannot make the desk preview read another file (the context of notes/private.md): apply_patch is not editable", async () => {
    const asked = "--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n hello\n+world\n";
    const r = await askedRequest(gate, "repo.apply_patch", { patch: asked }, call());
    expect(r.request.editable).toBe(false);
    // A zero-context insertion into a file the caller never named: its diff would show that file's lines.
    const probe = "--- a/notes/private.md\n+++ b/notes/private.md\n@@ -1,0 +2 @@\n+x\n";
    const seen = await gate.approvals.previewEdit(r.id, { by: gate.authority.owner(), input: { patch: probe }, expect: r.expect }).then(
      (p) => JSON.stringify(p.preview),
      (e: unknown) => (ToolError.is(e) ? `${e.code}: ${e.message}` : String(e)),
    );
    expect(seen).not.toContain("the private line");
    expect(seen).toMatch(/^edit_refused/);
  });

  it("write_file and commit keep their paths fixed: only the text is editable", async () => {
    const write = await askedRequest(gate, "repo.write_file", { path: "README.md", content: "hi\n" }, call());
    expect(write.request.editable).toEqual(["/content"]);
    const moved = await gate.approvals
      .previewEdit(write.id, { by: gate.authority.owner(), input: { path: "notes/private.md", content: "hi\n" }, expect: write.expect })
      .catch((e: unknown) => e);
    expect(ToolError.is(moved) && [moved.code, moved.details]).toEqual(["edit_refused", { paths: ["/path"] }]);
  });
});
