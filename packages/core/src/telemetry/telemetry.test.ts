import { context, metrics, SpanKind, SpanStatusCode, trace, type MeterProvider, type TracerProvider } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { afterEach, describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { envOfGate } from "../gate/gate.js";
import { INVOKE_STEPS } from "../gate/pipeline.js";
import { denyAsOwner, grantAsOwner } from "../testing/approver.js";
import { base, callSpans, gateWithout, LEAKED_SECRET, metricTotal, readOnly, tracedGate } from "./fixtures/traced-gate.js";

const stepSpans = (names: readonly string[]) => names.map((n) => `toolgate.${n}`);
const stepNames = INVOKE_STEPS.map((s) => s.name);

afterEach(() => {
  trace.disable();
  metrics.disable();
  context.disable();
});

describe("telemetry: spans per call and per step", () => {
  it("an ok call: a toolgate.invoke root with the tool's attributes and one child per step, in order", async () => {
    const { gate, spans } = tracedGate();
    const result = await gate.invoke("x.read", {}, { ...base, callRef: "call_1" });
    expect(result.status).toBe("ok");
    const { root, children, names } = callSpans(spans(), result.invocationId);
    expect(root.kind).toBe(SpanKind.INTERNAL);
    expect(root.parentSpanContext).toBeUndefined();
    expect(names).toEqual(stepSpans(stepNames));
    for (const child of children) expect(child.spanContext().traceId).toBe(root.spanContext().traceId);
    expect(root.attributes).toEqual({
      "toolgate.tool.id": "x.read",
      "toolgate.tool.family": "x",
      "toolgate.tool.effect": "read",
      "toolgate.tool.risk": "low",
      "toolgate.invocation.id": result.invocationId,
      "toolgate.profile": "full",
      "toolgate.status": "ok",
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "x.read",
      "gen_ai.tool.call.id": "call_1",
    });
    expect(root.status.code).toBe(SpanStatusCode.UNSET);
    expect(root.events.map((e) => e.name)).toEqual([]);
    // The body's progress is an event on the run span, as its listener would see it.
    const runSpan = children.find((s) => s.name === "toolgate.run")!;
    expect(runSpan.events.map((e) => [e.name, e.attributes])).toEqual([
      ["toolgate.progress", { "toolgate.progress.message": "half way", "toolgate.progress.fraction": 0.5 }],
    ]);
  });

  it("the progress listener the caller passed still gets every event when the run step is traced", async () => {
    const { gate, spans } = tracedGate();
    const seen: string[] = [];
    const result = await gate.invoke("x.read", {}, { ...base, onProgress: (e) => seen.push(e.message) });
    expect(result.status).toBe("ok");
    expect(seen).toEqual(["half way"]);
    expect(callSpans(spans(), result.invocationId).children.find((s) => s.name === "toolgate.run")!.events).toHaveLength(1);
  });

  it("a chatty body cannot grow its run span without bound: the first 64 progress events, each message cut to 1,000 characters", async () => {
    const { gate, spans } = tracedGate();
    let heard = 0;
    const result = await gate.invoke("x.chatty", {}, { ...base, onProgress: () => heard++ });
    expect(result.status).toBe("ok");
    expect(heard).toBe(200); // the caller's listener still hears every event
    const events = callSpans(spans(), result.invocationId).children.find((s) => s.name === "toolgate.run")!.events;
    expect(events).toHaveLength(64);
    expect(events[0]!.attributes!["toolgate.progress.message"]).toHaveLength(1000);
    expect(String(events[63]!.attributes!["toolgate.progress.message"]).startsWith("63 ")).toBe(true);
  });

  it("joins the caller's trace, and a body's own spans nest under the run step (a context manager registered)", async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const { gate, spans, tracerProvider } = tracedGate();
    trace.setGlobalTracerProvider(tracerProvider); // the body's tracer comes from the global API
    const caller = tracerProvider.getTracer("caller");
    const result = await caller.startActiveSpan("agent.step", async (span) => {
      const r = await gate.invoke("x.read", {}, base);
      span.end();
      return r;
    });
    const all = spans();
    const { root, children } = callSpans(all, result.invocationId);
    const callerSpan = all.find((s) => s.name === "agent.step")!;
    expect(root.parentSpanContext?.spanId).toBe(callerSpan.spanContext().spanId);
    expect(root.spanContext().traceId).toBe(callerSpan.spanContext().traceId);
    const runSpan = children.find((s) => s.name === "toolgate.run")!;
    const bodySpan = all.find((s) => s.name === "body.work")!;
    expect(bodySpan.parentSpanContext?.spanId).toBe(runSpan.spanContext().spanId);
    // Only the run step's context is the body's: the steps after it are the root's children again.
    expect(children.find((s) => s.name === "toolgate.settle")!.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
  });

  it("a refusal (policy denied): an event naming the code and the step that refused; no step after it ran", async () => {
    const { gate, spans, metrics: read } = tracedGate();
    const result = await gate.invoke("x.write", {}, { ...base, profile: readOnly });
    expect(result.status).toBe("denied");
    if (result.status !== "denied") return;
    const { root, names } = callSpans(spans(), result.invocationId);
    expect(names).toEqual(stepSpans(stepNames.slice(0, stepNames.indexOf("policy") + 1)));
    expect(root.attributes).toMatchObject({
      "toolgate.status": "denied",
      "toolgate.error.code": result.code,
      "toolgate.effect.boundary": "pre_effect_refusal",
      "toolgate.profile": "read-only",
    });
    expect(root.events.map((e) => [e.name, e.attributes])).toEqual([["toolgate.refusal", { "toolgate.error.code": result.code, "toolgate.step": "policy" }]]);
    expect(root.status.code).toBe(SpanStatusCode.UNSET);
    const data = await read();
    expect(metricTotal(data, "toolgate.refusals", { "toolgate.tool.id": "x.write", "toolgate.error.code": result.code })).toBe(1);
    expect(metricTotal(data, "toolgate.calls", { "toolgate.tool.id": "x.write", "toolgate.status": "denied" })).toBe(1);
  });

  it("an error refusal before any effect (malformed input) is a refusal too, and the span's status is ERROR", async () => {
    const { gate, spans } = tracedGate();
    const result = await gate.invoke("x.read", { unexpected: 1 } as never, base);
    expect(result).toMatchObject({ status: "error", boundary: "pre_effect_refusal" });
    if (result.status !== "error") return;
    const { root, children } = callSpans(spans(), result.invocationId);
    expect(root.events.map((e) => e.attributes)).toEqual([{ "toolgate.error.code": result.code, "toolgate.step": "validate" }]);
    expect(root.status).toEqual({ code: SpanStatusCode.ERROR, message: result.code });
    expect(children.at(-1)!.name).toBe("toolgate.validate");
    expect(children.at(-1)!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("approval_required: an event with the request id; granted and denied decisions are counted by the desk", async () => {
    const { gate, spans, metrics: read } = tracedGate();
    const first = await gate.invoke("x.write", {}, base);
    expect(first.status).toBe("approval_required");
    if (first.status !== "approval_required") return;
    const { root, names } = callSpans(spans(), first.invocationId);
    expect(names).toEqual(stepSpans(stepNames.slice(0, stepNames.indexOf("approve") + 1)));
    expect(root.attributes["toolgate.status"]).toBe("approval_required");
    expect(root.events.map((e) => [e.name, e.attributes])).toEqual([["toolgate.approval_requested", { "toolgate.approval.request_id": first.requestId }]]);
    const grant = await grantAsOwner(gate, first.requestId);
    const second = await gate.invoke("x.write", {}, { ...base, approval: grant });
    expect(second.status).toBe("ok");
    expect(callSpans(spans(), second.invocationId).names).toEqual(stepSpans(stepNames));
    const other = await gate.invoke("x.write", {}, { ...base, idempotencyKey: "another" });
    if (other.status !== "approval_required") throw new Error(other.status);
    await denyAsOwner(gate, other.requestId);
    const data = await read();
    const approvals = (decision: string) => metricTotal(data, "toolgate.approvals", { "toolgate.tool.id": "x.write", "toolgate.approval.decision": decision });
    expect([approvals("requested"), approvals("granted"), approvals("denied")]).toEqual([2, 1, 1]);
  });

  it("a timeout: the run span and the root end as errors with code timeout; not a refusal", async () => {
    const { gate, spans } = tracedGate();
    const result = await gate.invoke("x.slow", {}, base);
    expect(result).toMatchObject({ status: "error", code: "timeout" });
    if (result.status !== "error") return;
    const { root, children, names } = callSpans(spans(), result.invocationId);
    expect(names.at(-1)).toBe("toolgate.run");
    expect(children.at(-1)!.status).toEqual({ code: SpanStatusCode.ERROR, message: "timeout" });
    expect(root.status).toEqual({ code: SpanStatusCode.ERROR, message: "timeout" });
    expect(root.attributes).toMatchObject({ "toolgate.status": "error", "toolgate.error.code": "timeout", "toolgate.effect.boundary": result.boundary });
    expect(root.events.map((e) => e.name)).not.toContain("toolgate.refusal");
    await gate.drain();
  });

  it("a completed call replayed under its key says so", async () => {
    const { gate, spans } = tracedGate();
    const first = await gate.invoke("x.write", {}, { ...base, idempotencyKey: "k1" });
    if (first.status !== "approval_required") throw new Error(first.status);
    const grant = await grantAsOwner(gate, first.requestId);
    expect(await gate.invoke("x.write", {}, { ...base, idempotencyKey: "k1", approval: grant })).toMatchObject({ status: "ok", replayed: false });
    const again = await gate.invoke("x.write", {}, { ...base, idempotencyKey: "k1" });
    expect(again).toMatchObject({ status: "ok", replayed: true });
    expect(callSpans(spans(), again.invocationId).root.attributes["toolgate.replayed"]).toBe(true);
  });
});

describe("telemetry: what spans may carry", () => {
  it("principal and tenant are not recorded unless the operator opts in", async () => {
    const quiet = tracedGate();
    const r1 = await quiet.gate.invoke("x.read", {}, base);
    const attrs = callSpans(quiet.spans(), r1.invocationId).root.attributes;
    expect(attrs).not.toHaveProperty("toolgate.principal");
    expect(attrs).not.toHaveProperty("toolgate.tenant");
    expect(JSON.stringify(quiet.spans().map((s) => [s.attributes, s.events]))).not.toMatch(/agent-7|tenant-q/);
    const loud = tracedGate({ telemetry: { recordPrincipal: true } });
    const r2 = await loud.gate.invoke("x.read", {}, base);
    expect(callSpans(loud.spans(), r2.invocationId).root.attributes).toMatchObject({ "toolgate.principal": "agent-7", "toolgate.tenant": "tenant-q" });
  });

  it("a tool id, call ref, principal or progress text carrying a secret is redacted in every attribute and event", async () => {
    const secret = LEAKED_SECRET;
    const { gate, spans, metrics: read } = tracedGate({ secrets: [secret], telemetry: { recordPrincipal: true } });
    const leak = await gate.invoke("x.leak", {}, base);
    expect(callSpans(spans(), leak.invocationId).children.find((s) => s.name === "toolgate.run")!.events[0]!.attributes).toEqual({
      "toolgate.progress.message": "using [REDACTED]",
    });
    const unknown = await gate.invoke(`x.${secret}`, {}, base);
    expect(unknown).toMatchObject({ status: "error", code: "unknown_tool" });
    const viaRef = await gate.invoke("x.read", {}, { ...base, callRef: `ref-${secret}`, principal: `p-${secret}` });
    expect(viaRef.status).toBe("ok");
    const all = spans();
    const shown = JSON.stringify(all.map((s) => [s.name, s.attributes, s.events]));
    expect(shown).not.toContain(secret);
    expect(shown).not.toContain(secret.slice(0, 12));
    expect(callSpans(all, unknown.invocationId).root.attributes["toolgate.tool.id"]).toMatch(/^x\.\[REDACTED/);
    expect(callSpans(all, viaRef.invocationId).root.attributes["gen_ai.tool.call.id"]).toMatch(/^ref-\[REDACTED/);
    // A name a model made up is not a metric dimension at all.
    const data = await read();
    expect(JSON.stringify(data)).not.toContain(secret);
    expect(metricTotal(data, "toolgate.calls", { "toolgate.tool.id": "(unknown)", "toolgate.status": "error" })).toBe(1);
  });
});

describe("telemetry: metrics", () => {
  it("counts calls by tool and status, and times each step and the whole call", async () => {
    const { gate, metrics: read } = tracedGate();
    for (let i = 0; i < 3; i++) expect((await gate.invoke("x.read", {}, base)).status).toBe("ok");
    expect((await gate.invoke("x.write", {}, { ...base, profile: readOnly })).status).toBe("denied");
    const data = await read();
    expect(metricTotal(data, "toolgate.calls", { "toolgate.tool.id": "x.read", "toolgate.status": "ok" })).toBe(3);
    expect(metricTotal(data, "toolgate.calls", { "toolgate.tool.id": "x.write", "toolgate.status": "denied" })).toBe(1);
    expect(metricTotal(data, "toolgate.invoke.duration", { "toolgate.tool.id": "x.read", "toolgate.status": "ok" })).toBe(3);
    for (const step of stepNames) expect(metricTotal(data, "toolgate.step.duration", { "toolgate.step": step, "toolgate.tool.id": "x.read" }), step).toBe(3);
    const histogram = data.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === "toolgate.invoke.duration")!;
    expect(histogram.descriptor.unit).toBe("s");
    expect(data.scopeMetrics.map((s) => s.scope.name)).toEqual(["@toolgate/core"]);
  });
});

describe("telemetry: providers", () => {
  it("with no provider registered or passed a call records nothing and allocates no trace", async () => {
    const gate = gateWithout();
    const env = envOfGate(gate)!;
    expect(env.telemetry.begin({ invocationId: "inv_x" })).toBeUndefined();
    expect((await gate.invoke("x.read", {}, base)).status).toBe("ok");
  });

  it("a global provider registered after the gate was created is picked up, and dropped once unregistered", async () => {
    const gate = gateWithout();
    const { exporter, tracerProvider, meterProvider, metrics: read } = tracedGate();
    await gate.invoke("x.read", {}, base);
    expect(trace.setGlobalTracerProvider(tracerProvider)).toBe(true);
    expect(metrics.setGlobalMeterProvider(meterProvider)).toBe(true);
    const seen = await gate.invoke("x.read", {}, base);
    expect(callSpans(exporter.getFinishedSpans(), seen.invocationId).names).toEqual(stepSpans(stepNames));
    expect(metricTotal(await read(), "toolgate.calls", { "toolgate.tool.id": "x.read" })).toBe(1);
    trace.disable();
    metrics.disable();
    const count = exporter.getFinishedSpans().length;
    await gate.invoke("x.read", {}, base);
    expect(exporter.getFinishedSpans()).toHaveLength(count);
    expect(envOfGate(gate)!.telemetry.begin({ invocationId: "inv_y" })).toBeUndefined();
  });

  it("a malformed telemetry option is config_invalid at createGate", () => {
    const bad: unknown[] = [null, "on", { tracerProvider: {} }, { meterProvider: { getMeter: 1 } }, { recordPrincipal: "yes" }];
    for (const telemetry of bad) {
      let thrown: unknown;
      try {
        gateWithout({ telemetry: telemetry as never });
      } catch (error) {
        thrown = error;
      }
      expect(ToolError.is(thrown, "config_invalid"), JSON.stringify(telemetry)).toBe(true);
    }
  });

  it("a provider that throws never fails a call", async () => {
    const boom = () => {
      throw new Error("exporter down");
    };
    const throwingTracer = { getTracer: () => ({ startSpan: boom, startActiveSpan: boom }) } as unknown as TracerProvider;
    const throwingMeter = { getMeter: boom } as unknown as MeterProvider;
    const spanThatThrows = {
      setAttributes: boom,
      addEvent: boom,
      setStatus: boom,
      end: boom,
      spanContext: () => trace.wrapSpanContext({ traceId: "1".repeat(32), spanId: "2".repeat(16), traceFlags: 1 }).spanContext(),
    };
    const endThrows = { getTracer: () => ({ startSpan: () => spanThatThrows }) } as unknown as TracerProvider;
    for (const telemetry of [{ tracerProvider: throwingTracer }, { meterProvider: throwingMeter }, { tracerProvider: endThrows }]) {
      const gate = gateWithout({ telemetry });
      expect((await gate.invoke("x.read", {}, base)).status, Object.keys(telemetry)[0]).toBe("ok");
      expect((await gate.invoke("x.write", {}, { ...base, profile: readOnly })).status).toBe("denied");
    }
  });
});
