import { describe, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { defineTool, type ApprovalRule } from "./manifest.js";

const input = z.object({ x: z.number() });
const output = z.object({ y: z.number() });
const common = {
  id: "demo.do_thing",
  title: "Do a thing",
  description: "Does a thing.",
  input,
  output,
  actionType: "compute",
  requiredAllowlist: ["demo:write"],
  risk: "medium",
  runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
  untrustedOutput: false,
  handler: (value: { x: number }) => ({ y: value.x }),
} as const;
const flags = { idempotent: true, retryable: true, reversible: true } as const;
const preview = (value: { x: number }) => ({ summary: `do ${value.x}` });

describe("defineTool: a tool that can require approval has a preview", () => {
  it("accepts approval never without a preview, and always or a predicate with one", () => {
    defineTool({ ...common, ...flags, effect: "write", approval: "never" });
    defineTool({ ...common, ...flags, effect: "write", approval: "always", preview });
    defineTool({ ...common, ...flags, effect: "write", approval: (value) => value.x > 1, preview: (value) => ({ summary: `${value.x}` }) });
  });

  it("refuses approval always without a preview", () => {
    // @ts-expect-error approval "always" needs a preview
    defineTool({ ...common, ...flags, effect: "write", approval: "always" });
  });

  it("refuses a predicate without a preview", () => {
    // @ts-expect-error a predicate can require approval, so it needs a preview
    defineTool({ ...common, ...flags, effect: "write", approval: (value) => value.x > 1 });
  });

  it("refuses a rule that is only known to be some ApprovalRule without a preview", () => {
    const rule = "always" as ApprovalRule<{ x: number }>;
    defineTool({ ...common, ...flags, effect: "write", approval: rule, preview });
    // @ts-expect-error the rule may require approval
    defineTool({ ...common, ...flags, effect: "write", approval: rule });
  });

  it("types the preview's input from the input schema", () => {
    // @ts-expect-error x is a number
    defineTool({ ...common, ...flags, effect: "write", approval: "always", preview: (value: { x: string }) => ({ summary: value.x }) });
  });
});

describe("defineTool: write tools declare every execution flag; read and pure tools may omit them", () => {
  it("lets read and pure tools omit idempotent, retryable and reversible", () => {
    const read = defineTool({ ...common, effect: "read", approval: "never" });
    defineTool({ ...common, effect: "none", approval: "never", idempotent: false });
    expectTypeOf(read.idempotent).toEqualTypeOf<boolean>();
    expectTypeOf(read.reversible).toEqualTypeOf<boolean>();
  });

  it("refuses a write tool without idempotent", () => {
    // @ts-expect-error a write tool declares idempotent
    defineTool({ ...common, effect: "write", approval: "never", retryable: false, reversible: false });
    // @ts-expect-error the same with a preview: still no idempotent
    defineTool({ ...common, effect: "write", approval: "always", preview, retryable: false, reversible: false });
  });

  it("refuses a destructive tool without any flag", () => {
    // @ts-expect-error a destructive tool declares every flag
    defineTool({ ...common, effect: "destructive", approval: "always", preview });
  });
});

describe("defineTool: the provider comes from the connector", () => {
  it("accepts a connector without a provider, and types the manifest's provider", () => {
    const tool = defineTool({ ...common, effect: "read", approval: "never", connector: { provider: "mail", scopes: ["mail.read"] } });
    expectTypeOf(tool.provider).toEqualTypeOf<string | undefined>();
  });
});
