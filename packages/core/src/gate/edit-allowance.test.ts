import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../manifest.js";
import { defineProfile } from "../profile.js";
import { ToolError } from "../errors.js";
import { editableFor, pathsAllowed } from "./edit-allowance.js";
import { diffInputs } from "./edit-desk.js";

const input = z.strictObject({
  to: z.array(z.string()),
  subject: z.string(),
  start: z.object({ dateTime: z.string(), timeZone: z.string().optional() }).optional(),
  note: z.string().nullable().optional(),
  meta: z.record(z.string(), z.string()).optional(),
  threadId: z.string().optional(),
});
const tool = (edits?: unknown) =>
  defineTool({
    id: "mail.send_note",
    title: "Send",
    description: "Sends a note.",
    input,
    output: z.object({}),
    actionType: "email-send",
    requiredAllowlist: ["mail:send"],
    risk: "medium",
    effect: "write",
    idempotent: false,
    retryable: false,
    reversible: false,
    approval: "always",
    preview: (i) => ({ summary: i.subject }),
    runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
    untrustedOutput: false,
    handler: () => ({}),
    ...(edits === undefined ? {} : { edits: edits as false }),
  });
const profile = (approvalEdits?: unknown) =>
  defineProfile({ name: "p", allow: ["mail:send"], maxRisk: "high", ...(approvalEdits === undefined ? {} : { approvalEdits: approvalEdits as never }) });
const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e as ToolError;
  }
  throw new Error("not refused");
};

describe("manifest edits (refused at define time)", () => {
  it.each([
    ["a pointer into an array", { fields: ["/to/0"] }],
    ["an undeclared member", { fields: ["/account"] }],
    ["an open record key", { fields: ["/meta/x"] }],
    ["not a pointer", { fields: ["to"] }],
    ["a bad escape", { fields: ["/a~2"] }],
    ["a repeat", { fields: ["/to", "/to"] }],
    ["an empty list", { fields: [] }],
    ["too many", { fields: Array.from({ length: 33 }, () => "/to") }],
    ["an unknown key", { fields: ["/to"], all: true }],
    ["true", true],
    ["a string", "/to"],
  ])("%s → manifest_invalid", (_, edits) => {
    const e = refusal(() => tool(edits));
    expect(e).toBeInstanceOf(ToolError);
    expect(e.code).toBe("manifest_invalid");
  });

  it("accepts declared members, nested, optional and nullable ones, and freezes the list", () => {
    const m = tool({ fields: ["/to", "/start/dateTime", "/note", ""] });
    expect(m.edits).toEqual({ fields: ["/to", "/start/dateTime", "/note", ""] });
    expect(Object.isFrozen((m.edits as { fields: string[] }).fields)).toBe(true);
    expect(tool(false).edits).toBe(false);
  });
});

describe("profile approvalEdits (refused at define time)", () => {
  it.each([
    ["a bad key", { "not a tool": false }],
    ["true", { "mail.send_note": true }],
    ["a non-pointer", { "mail.*": ["to"] }],
    ["an empty list", { "mail.*": [] }],
    ["a repeat", { "mail.*": ["/to", "/to"] }],
    ["not an object", ["/to"]],
  ])("%s → profile_invalid", (_, approvalEdits) => {
    const e = refusal(() => profile(approvalEdits));
    expect(e.code).toBe("profile_invalid");
  });

  it("is frozen, and a profile spread into defineProfile again keeps it", () => {
    const p = profile({ "mail.*": ["/to"], "mail.send_note": false });
    expect(Object.isFrozen(p.approvalEdits)).toBe(true);
    expect(Object.isFrozen(p.approvalEdits!["mail.*"])).toBe(true);
    expect(defineProfile({ ...p }).approvalEdits).toEqual({ "mail.*": ["/to"], "mail.send_note": false });
  });
});

describe("editableFor: manifest ∩ profile", () => {
  it("defaults to the whole input; false stays false whatever the profile says", () => {
    expect(editableFor(tool(), undefined)).toEqual([""]);
    expect(editableFor(tool(false), profile({ "mail.send_note": ["/to"] }))).toBe(false);
  });

  it("a profile only narrows: by tool, by family, both; a wider profile entry gives nothing more", () => {
    const m = tool({ fields: ["/to", "/start"] });
    expect(editableFor(m, profile({ "mail.send_note": ["/to", "/subject"] }))).toEqual(["/to"]);
    expect(editableFor(m, profile({ "mail.*": ["/start/dateTime"] }))).toEqual(["/start/dateTime"]);
    expect(editableFor(m, profile({ "mail.*": [""] }))).toEqual(["/start", "/to"]);
    expect(editableFor(m, profile({ "mail.*": ["/to", "/start"], "mail.send_note": ["/start"] }))).toEqual(["/start"]);
    expect(editableFor(m, profile({ "mail.*": false }))).toBe(false);
    expect(editableFor(m, profile({ "mail.send_note": ["/subject"] }))).toBe(false);
    expect(editableFor(m, profile({ "other.*": false }))).toEqual(["/to", "/start"]);
  });

  it("is cached per manifest and profile", () => {
    const m = tool({ fields: ["/to", "/start"] });
    const p = profile({ "mail.*": ["/to"] });
    expect(editableFor(m, p)).toBe(editableFor(m, p));
  });

  it("a hand-built profile or manifest whose lists defineProfile/defineTool would refuse allows nothing", () => {
    const p = { ...profile(), approvalEdits: { "mail.*": ["to"] } } as never;
    expect(editableFor(tool(), p)).toBe(false);
    const m = { ...tool(), edits: { fields: "/to" } } as never;
    expect(editableFor(m, undefined)).toBe(false);
  });
});

describe("pathsAllowed", () => {
  it("returns the paths no pointer covers; a pointer covers what is under it, not its siblings or prefixes by name", () => {
    expect(pathsAllowed(["/to", "/start"], ["/to", "/start/dateTime"])).toEqual([]);
    expect(pathsAllowed(["/to"], ["/top", "/threadId", "/to"])).toEqual(["/top", "/threadId"]);
    expect(pathsAllowed(["/start/dateTime"], ["/start"])).toEqual(["/start"]);
    expect(pathsAllowed(false, ["/to"])).toEqual(["/to"]);
    expect(pathsAllowed([""], ["", "/a/b"])).toEqual([]);
  });
});

describe("diffInputs", () => {
  it("compares objects member by member, arrays and scalars whole, with absent sides absent", () => {
    const asked = { to: ["a@x", "b@x"], subject: "hi", start: { dateTime: "10:00", timeZone: "UTC" }, gone: 1 };
    const edited = { to: ["a@x"], subject: "hi", start: { dateTime: "11:00", timeZone: "UTC" }, added: null };
    expect(diffInputs(asked, edited)).toEqual([
      { path: "/added", after: null },
      { path: "/gone", before: 1 },
      { path: "/start/dateTime", before: "10:00", after: "11:00" },
      { path: "/to", before: ["a@x", "b@x"], after: ["a@x"] },
    ]);
    expect("after" in diffInputs({ a: 1 }, {})[0]!).toBe(false);
  });

  it("escapes member names, compares whole when a type changes, and is empty when equal in canonical form", () => {
    expect(diffInputs({ "a/b~": 1 }, { "a/b~": 2 })).toEqual([{ path: "/a~1b~0", before: 1, after: 2 }]);
    expect(diffInputs({ a: { b: 1 } }, { a: [1] })).toEqual([{ path: "/a", before: { b: 1 }, after: [1] }]);
    expect(diffInputs("x", "y")).toEqual([{ path: "", before: "x", after: "y" }]);
    expect(diffInputs({ a: { x: 1, y: 2 } }, { a: { y: 2, x: 1 } })).toEqual([]);
    expect(diffInputs({ __proto__: null, a: 1 }, JSON.parse('{"__proto__": 1, "a": 1}'))).toEqual([{ path: "/__proto__", after: 1 }]);
  });
});
