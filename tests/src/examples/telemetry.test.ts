/**
 * The operating guide's examples run: the SDK registration sends the gate's spans and metrics over
 * OTLP/HTTP to a loopback receiver this test starts, and the profile's limits parse as the guide
 * says they count.
 */
import { context, metrics, trace } from "@opentelemetry/api";
import { limitsFor } from "@toolgate/core/operator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { echoGate, startOtlpReceiver, type OtlpReceiver } from "../telemetry/fixtures/otlp.js";

let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  process.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.origin;
});

afterAll(async () => {
  trace.disable();
  metrics.disable();
  context.disable();
  delete process.env["OTEL_EXPORTER_OTLP_ENDPOINT"];
  await receiver.close();
});

describe("the operating guide's telemetry example", () => {
  it("registered once, it exports a gate created before or after it: spans and metrics reach the collector over OTLP", async () => {
    const { gate, profile } = echoGate("guide");
    const { tracerProvider, meterProvider } = await import("./telemetry.js");
    const result = await gate.invoke("guide.echo", { word: "hello" }, { principal: "agent-1", tenant: "acme", profile });
    expect(result).toMatchObject({ status: "ok", output: { word: "hello" } });
    await tracerProvider.forceFlush();
    await meterProvider.forceFlush();
    const traces = receiver.received.filter((r) => r.path === "/v1/traces").map((r) => r.body);
    const metricBodies = receiver.received.filter((r) => r.path === "/v1/metrics").map((r) => r.body);
    expect(traces.join("")).toContain('"name":"toolgate.invoke"');
    expect(traces.join("")).toContain('"name":"toolgate.run"');
    expect(metricBodies.join("")).toContain('"name":"toolgate.calls"');
    expect(metricBodies.join("")).toContain('"name":"toolgate.step.duration"');
    await tracerProvider.shutdown();
    await meterProvider.shutdown();
  });
});

describe("the operating guide's limits example", () => {
  it("gives gmail.send_message the per-person send budget, the tenant's call budget and the in-flight bound", async () => {
    const { assistant } = await import("./limits-profile.js");
    expect(limitsFor(assistant, "gmail.send_message").map((l) => l.id)).toEqual(["sends", "calls", "gmail-in-flight"]);
    expect(limitsFor(assistant, "gmail.read_message").map((l) => l.id)).toEqual(["calls", "gmail-in-flight"]);
    expect(limitsFor(assistant, "calendar.create_event").map((l) => l.id)).toEqual(["calls"]);
  });
});
