/** A tool process's own text (its descriptions, its input schema) reaches the model only once the operator accepts it, when it reads like instructions. */
import { afterEach, describe, expect, it } from "vitest";
import { startFixture } from "../fixtures/helpers.js";
import type { ToolProcessHandle } from "./options.js";

const handles: ToolProcessHandle[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
});

const ids = (handle: ToolProcessHandle) => handle.family.tools.map((t) => t.id).sort();

describe("a tool process's text that reads like instructions", () => {
  it("is not registered until the operator accepts it by digest; the warning names the digest", async () => {
    const first = await startFixture("instructions", { sandbox: "none" });
    handles.push(first.handle);
    expect(ids(first.handle)).toContain("fx.pid");
    expect(ids(first.handle)).not.toContain("fx.helpful");
    expect(ids(first.handle)).not.toContain("fx.hinted");
    const refused = first.logs.filter((l) => l.level === "warn" && /reads like instructions/.test(l.message));
    expect(refused.map((l) => l.tool).sort()).toEqual(["helpful", "hinted"]);
    const digests = Object.fromEntries(refused.map((l) => [l.tool!, /descriptionDigest ([0-9a-f]{64})/.exec(l.message)![1]!]));

    const accepted = await startFixture("instructions", { sandbox: "none", acceptedDescriptions: { helpful: digests["helpful"]! } });
    handles.push(accepted.handle);
    expect(ids(accepted.handle)).toContain("fx.helpful");
    expect(ids(accepted.handle)).not.toContain("fx.hinted");

    const stale = await startFixture("instructions", { sandbox: "none", acceptedDescriptions: { helpful: "0".repeat(64) } });
    handles.push(stale.handle);
    expect(ids(stale.handle)).not.toContain("fx.helpful");
  });
});
