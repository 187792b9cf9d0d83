/**
 * The gate's spans leave the process over OTLP/HTTP, as an operator's collector would receive them:
 * the real exporter posts to a loopback receiver this test starts (no other host is reached).
 */
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { defineProfile } from "@toolgate/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { echoGate, startOtlpReceiver, type OtlpReceiver } from "./fixtures/otlp.js";

interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  events?: { name: string; attributes: { key: string; value: Record<string, unknown> }[] }[];
  status?: { code?: number; message?: string };
}

const SECRET = "otlp-secret-7c1e9a44b2";
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
});

afterAll(async () => {
  await receiver.close();
});

const attr = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
};

describe("OTLP over HTTP", () => {
  it("a call's spans reach a collector: the root and its step spans, nested, with the gate's attributes and events", async () => {
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${receiver.origin}/v1/traces` }))] });
    const { gate, profile } = echoGate("otlp", { secrets: [SECRET], telemetry: { tracerProvider: provider } });
    const nothingAllowed = defineProfile({ name: "none", allow: [], maxRisk: "low" });
    const call = { principal: "agent-otlp", tenant: "tenant-otlp", profile, callRef: `ref-${SECRET}` };
    const ok = await gate.invoke("otlp.echo", { word: "hi" }, call);
    const denied = await gate.invoke("otlp.echo", { word: "hi" }, { ...call, profile: nothingAllowed });
    expect([ok.status, denied.status]).toEqual(["ok", "denied"]);
    await provider.forceFlush();
    await provider.shutdown();

    expect(receiver.received.length).toBeGreaterThan(0);
    for (const r of receiver.received) {
      expect(r.path).toBe("/v1/traces");
      expect(r.contentType).toMatch(/^application\/json/);
      // Neither the secret nor who called leaves the process (the operator did not opt in).
      expect(r.body).not.toContain(SECRET);
      expect(r.body).not.toContain("agent-otlp");
    }
    const spans: OtlpSpan[] = receiver.received.flatMap((r) =>
      (JSON.parse(r.body) as { resourceSpans: { scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[] }[] }).resourceSpans.flatMap((rs) =>
        rs.scopeSpans.filter((s) => s.scope.name === "@toolgate/core").flatMap((s) => s.spans),
      ),
    );
    const rootOf = (invocationId: string) => spans.find((s) => s.name === "toolgate.invoke" && attr(s, "toolgate.invocation.id") === invocationId)!;

    const root = rootOf(ok.invocationId);
    expect(attr(root, "toolgate.tool.id")).toBe("otlp.echo");
    expect(attr(root, "toolgate.status")).toBe("ok");
    expect(attr(root, "gen_ai.operation.name")).toBe("execute_tool");
    expect(attr(root, "gen_ai.tool.call.id")).toBe("ref-[REDACTED]");
    const children = spans.filter((s) => s.parentSpanId === root.spanId);
    expect(children.map((s) => s.name)).toEqual(
      expect.arrayContaining(["toolgate.resolve", "toolgate.validate", "toolgate.policy", "toolgate.run", "toolgate.settle"]),
    );
    for (const child of children) expect(child.traceId).toBe(root.traceId);

    const refused = rootOf(denied.invocationId);
    expect(attr(refused, "toolgate.status")).toBe("denied");
    expect(refused.events?.map((e) => [e.name, Object.fromEntries(e.attributes.map((a) => [a.key, Object.values(a.value)[0]]))])).toEqual([
      ["toolgate.refusal", { "toolgate.error.code": denied.status === "denied" ? denied.code : "", "toolgate.step": "policy" }],
    ]);
    expect(spans.filter((s) => s.parentSpanId === refused.spanId).map((s) => s.name)).not.toContain("toolgate.run");
  });
});
