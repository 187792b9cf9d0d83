/**
 * The operating guide's examples run: the SDK registration sends the gate's spans and metrics over
 * OTLP/HTTP to a loopback receiver this test starts, and the profile's limits parse as the guide
 * says they count.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { context, metrics, trace } from "@opentelemetry/api";
import { createGate, createMemoryJournal, createToolRegistry, defineFamily, defineProfile, defineTool } from "@toolgate/core";
import { limitsFor } from "@toolgate/core/operator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";

const received: { path: string; body: string }[] = [];
let server: Server;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ path: req.url ?? "", body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  process.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  trace.disable();
  metrics.disable();
  context.disable();
  delete process.env["OTEL_EXPORTER_OTLP_ENDPOINT"];
  await new Promise((resolve) => server.close(resolve));
});

const shout = defineTool({
  id: "guide.shout",
  title: "Shout",
  description: "Upper-case a word.",
  input: z.object({ word: z.string().max(64) }).strict(),
  output: z.object({ word: z.string() }),
  actionType: "compute",
  effect: "none",
  requiredAllowlist: ["guide:use"],
  risk: "low",
  approval: "never",
  untrustedOutput: false,
  runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
  handler: ({ word }) => ({ word: word.toUpperCase() }),
});

describe("the operating guide's telemetry example", () => {
  it("registered once, it exports a gate created before or after it: spans and metrics reach the collector over OTLP", async () => {
    const registry = createToolRegistry({ families: [defineFamily({ name: "guide", tools: [shout], permissions: ["guide:use"] })] });
    const profile = defineProfile({ name: "guide", allow: ["guide:use"], maxRisk: "low" });
    const gate = createGate({ registry, journal: createMemoryJournal() });
    const { tracerProvider, meterProvider } = await import("./telemetry.js");
    const result = await gate.invoke("guide.shout", { word: "hello" }, { principal: "agent-1", tenant: "acme", profile });
    expect(result).toMatchObject({ status: "ok", output: { word: "HELLO" } });
    await tracerProvider.forceFlush();
    await meterProvider.forceFlush();
    const traces = received.filter((r) => r.path === "/v1/traces").map((r) => r.body);
    const metricBodies = received.filter((r) => r.path === "/v1/metrics").map((r) => r.body);
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
