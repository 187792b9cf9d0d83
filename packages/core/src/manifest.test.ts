import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolError } from "./errors.js";
import { defineFamily } from "./family.js";
import { defineTool, type ToolDefinition } from "./manifest.js";

const valid = {
  id: "demo.do_thing",
  title: "Do a thing",
  description: "Does a thing.",
  input: z.object({ x: z.number() }),
  output: z.object({ y: z.number() }),
  actionType: "compute",
  effect: "write",
  requiredAllowlist: ["demo:write"],
  risk: "medium",
  approval: "never",
  idempotent: true,
  retryable: true,
  reversible: true,
  runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
  untrustedOutput: false,
  handler: (input: { x: number }) => ({ y: input.x }),
} as const;

type AnyDef = ToolDefinition<string, z.ZodType, z.ZodType, string>;
const attempt = (overrides: Partial<Record<keyof AnyDef, unknown>>) => () => defineTool({ ...valid, ...overrides } as unknown as AnyDef);

describe("defineTool refuses a bad manifest with a clear message", () => {
  const cases: [string, Partial<Record<keyof AnyDef, unknown>>, RegExp][] = [
    ["id without a family", { id: "dothing" }, /id must match/],
    ["id with capitals", { id: "demo.DoThing" }, /id must match/],
    ["id with a dash", { id: "demo.do-thing" }, /id must match/],
    ["id too long", { id: `demo.${"a".repeat(70)}` }, /at most 64/],
    ["no description", { description: " " }, /description is required/],
    ["input not a schema", { input: { type: "object" } }, /input must be a zod schema/],
    ["unknown effect", { effect: "mutate" }, /effect must be one of/],
    ["unknown risk", { risk: "extreme" }, /risk must be one of/],
    ["broad token", { requiredAllowlist: ["external:write"] }, /too broad/],
    ["wildcard token", { requiredAllowlist: ["demo:*"] }, /area:verb|too broad/],
    ["no token on a write", { requiredAllowlist: [] }, /must require a token/],
    ["approval without preview", { approval: "always" }, /must define preview/],
    ["predicate approval without preview", { approval: () => true }, /must define preview/],
    ["high-risk write that never asks", { risk: "high" }, /cannot declare approval "never"/],
    ["critical destructive that never asks", { effect: "destructive", risk: "critical" }, /cannot declare approval "never"/],
    ["egress without provider", { dataEgress: true, dataClass: "personal" }, /egress to whom/],
    ["egress without class", { dataEgress: true, provider: "x" }, /needs a dataClass/],
    ["connector for another provider", { provider: "a", connector: { provider: "b", scopes: ["s"] } }, /differs from provider/],
    ["connector without scopes", { connector: { provider: "a", scopes: [] } }, /at least one scope/],
    ["write tool without idempotent", { idempotent: undefined }, /idempotent must be true or false \(a write tool declares it\)/],
    ["destructive tool without reversible", { effect: "destructive", reversible: undefined }, /reversible must be true or false/],
    ["read tool with a flag that is not a boolean", { effect: "read", retryable: "yes" }, /retryable must be true or false/],
    ["missing isolation", { runtimeIsolation: { network: "none" } }, /runtimeIsolation/],
    ["bad timeout", { timeoutMs: -1 }, /timeoutMs/],
    ["no handler", { handler: undefined }, /handler must be a function/],
  ];
  for (const [label, overrides, message] of cases) {
    it(label, () => {
      expect(attempt(overrides)).toThrow(message);
      try {
        attempt(overrides)();
      } catch (error) {
        expect(ToolError.is(error, "manifest_invalid")).toBe(true);
      }
    });
  }

  it("accepts a valid manifest, derives sovereignty, hides the handler", () => {
    const tool = defineTool(valid);
    expect(tool.sovereignty).toBe("sovereign");
    expect(tool.visibility).toBe("default");
    expect(tool.timeoutMs).toBe(30_000);
    expect(Object.isFrozen(tool)).toBe(true);
    expect("handler" in tool).toBe(false);
    expect(defineTool({ ...valid, provider: "x" }).sovereignty).toBe("connected-read");
    expect(defineTool({ ...valid, provider: "x", dataEgress: true, dataClass: "personal" }).sovereignty).toBe("connected-egress");
  });

  it("defaults a read or pure tool's execution flags to true", () => {
    const { idempotent: _idempotent, retryable: _retryable, reversible: _reversible, ...rest } = valid;
    for (const effect of ["read", "none"] as const) {
      expect(defineTool({ ...rest, effect })).toMatchObject({ idempotent: true, retryable: true, reversible: true });
    }
    expect(defineTool({ ...rest, effect: "read", idempotent: false })).toMatchObject({ idempotent: false, retryable: true, reversible: true });
  });

  it("takes the provider from the connector", () => {
    const connector = { provider: "mail", scopes: ["mail.read"] };
    const tool = defineTool({ ...valid, connector });
    expect(tool.provider).toBe("mail");
    expect(tool.sovereignty).toBe("connected-read");
    expect(defineTool({ ...valid, connector, dataEgress: true, dataClass: "personal" }).sovereignty).toBe("connected-egress");
    expect(defineTool({ ...valid, connector, provider: "mail" }).provider).toBe("mail");
    expect(defineTool(valid).provider).toBeUndefined();
  });
});

describe("defineFamily", () => {
  it("refuses tokens the family does not declare, ids of another family, and foreign permissions", () => {
    const tool = defineTool(valid);
    expect(() => defineFamily({ name: "demo", tools: [tool], permissions: ["demo:read"] })).toThrow(/requires demo:write, not in the family's permissions/);
    expect(() => defineFamily({ name: "other", tools: [tool], permissions: ["demo:write"] })).toThrow(/does not belong to family other/);
    expect(() => defineFamily({ name: "demo", tools: [tool], permissions: ["demo:write", "gmail:send"] })).toThrow(/must be family-specific/);
    expect(() => defineFamily({ name: "demo", tools: [tool, tool], permissions: ["demo:write"] })).toThrow(/appears twice/);
    expect(() => defineFamily({ name: "demo", tools: [], permissions: [] })).toThrow(/at least one tool/);
  });

  it("lists every problem in one family_invalid error", () => {
    expect(() => defineFamily({ name: "Demo", tools: [defineTool(valid)], permissions: ["demo:read"] })).toThrow(
      'family "Demo" is invalid: family name "Demo" must be a lower-case word; tool demo.do_thing does not belong to family Demo (ids start with "Demo."); ' +
        'tool demo.do_thing requires demo:write, not in the family\'s permissions [demo:read]; permission demo:read must be family-specific ("Demo:…")',
    );
    expect(() => defineFamily({ name: "demo", tools: [{ id: "demo.x" }] as never, permissions: "demo:write" as never })).toThrow(
      expect.objectContaining({
        code: "family_invalid",
        message: 'family "demo" is invalid: tools must be manifests made by defineTool; permissions must be an array',
      }),
    );
  });

  it("returns a frozen family that keeps the manifests themselves", () => {
    const tool = defineTool(valid);
    const family = defineFamily({ name: "demo", tools: [tool], permissions: ["demo:write"], description: "Demo." });
    expect(family).toEqual({ name: "demo", tools: [tool], permissions: ["demo:write"], description: "Demo." });
    expect(family.tools[0]).toBe(tool);
    for (const part of [family, family.tools, family.permissions]) expect(Object.isFrozen(part)).toBe(true);
  });

  it("allows the shared boundary tokens without declaring them", () => {
    const tool = defineTool({ ...valid, requiredAllowlist: ["demo:write", "verifier:command"] });
    expect(defineFamily({ name: "demo", tools: [tool], permissions: ["demo:write"] }).tools).toHaveLength(1);
  });
});
