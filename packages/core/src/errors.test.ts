import { describe, expect, it } from "vitest";
import { TOOL_ERROR_CODES, ToolError } from "./errors.js";

describe("ToolError across copies of core", () => {
  it("is recognised by ToolError.is and instanceof when it comes from another copy of the module", async () => {
    // A second instance of the same module: what an application gets with two installs of core.
    const other = (await import(/* @vite-ignore */ `./errors.js?copy=${Date.now()}`)) as typeof import("./errors.js");
    expect(other.ToolError).not.toBe(ToolError);
    const foreign = new other.ToolError("rate_limited", "slow down");
    expect(ToolError.is(foreign)).toBe(true);
    expect(ToolError.is(foreign, "rate_limited")).toBe(true);
    expect(ToolError.is(foreign, "not_found")).toBe(false);
    expect(foreign instanceof ToolError).toBe(true);
    expect(other.ToolError.is(new ToolError("timeout", "late"))).toBe(true);
  });

  it("is not fooled by look-alikes: a plain object with a code, an Error named ToolError, an unknown code", () => {
    expect(ToolError.is({ name: "ToolError", code: "timeout", message: "x" })).toBe(false);
    const named = Object.assign(new Error("x"), { name: "ToolError", code: "timeout" });
    expect(ToolError.is(named)).toBe(false);
    expect(named instanceof ToolError).toBe(false);
    const branded = new ToolError("timeout", "x");
    (branded as { code: string }).code = "not_a_code";
    expect(ToolError.is(branded)).toBe(false);
    expect(ToolError.is(null)).toBe(false);
  });

  it("keeps instanceof of subclasses strict", () => {
    class Special extends ToolError {}
    expect(new Special("timeout", "x") instanceof Special).toBe(true);
    expect(new ToolError("timeout", "x") instanceof Special).toBe(false);
    expect(new Special("timeout", "x") instanceof ToolError).toBe(true);
  });
});

describe("edit_refused", () => {
  it("is a call error of its own: an edit outside what may be edited is neither a person's refusal nor a stale view", () => {
    expect(TOOL_ERROR_CODES.edit_refused.kind).toBe("call");
    expect(TOOL_ERROR_CODES.edit_refused.summary).toMatch(/edit/);
    const error = new ToolError("edit_refused", "outside", { details: { paths: ["/account"] } });
    expect(ToolError.is(error, "edit_refused")).toBe(true);
    expect(ToolError.is(error, "approver_forbidden") || ToolError.is(error, "approval_invalid")).toBe(false);
    expect(error.details).toEqual({ paths: ["/account"] });
  });
});
