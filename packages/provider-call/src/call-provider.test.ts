import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ToolError } from "@toolgate/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { callProvider, type CallPolicy } from "./call-provider.js";
import type { ProviderFailure } from "./provider-failure.js";
import { headerValue, parseRetryAfter, resolveRetry, type RetryOptions } from "./retry.js";

/** A loopback server that answers each request with the next scripted status ("drop" closes the socket unanswered). */
interface Scripted {
  readonly url: string;
  readonly seen: number[];
  answer(...script: (number | "drop" | { status: number; retryAfter: string })[]): void;
}

let server: Server;
let scripted: Scripted;

beforeEach(async () => {
  const script: (number | "drop" | { status: number; retryAfter: string })[] = [];
  const seen: number[] = [];
  server = createServer((request, response) => {
    const next = script.shift() ?? 200;
    if (next === "drop") {
      seen.push(0);
      request.socket.destroy();
      return;
    }
    const { status, retryAfter } = typeof next === "number" ? { status: next, retryAfter: undefined } : next;
    seen.push(status);
    response.writeHead(status, { "content-type": "application/json", ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }) });
    response.end(JSON.stringify(status < 400 ? { ok: true } : { code: `status_${status}`, message: `refused with ${status}` }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  scripted = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen, answer: (...next) => void script.push(...next) };
});
afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The error a small client library throws for a non-2xx answer. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Headers,
    readonly body: { code?: string; message?: string },
  ) {
    super(`HTTP ${status}`);
  }
}

const request = async (signal: AbortSignal): Promise<{ ok: boolean }> => {
  const response = await fetch(scripted.url, { signal });
  const body = (await response.json()) as { ok: boolean; code?: string; message?: string };
  if (!response.ok) throw new HttpError(response.status, response.headers, body);
  return body;
};

/** A connector's reading: a 429 from this provider is documented as applying nothing. */
const readFailure = (error: unknown): ProviderFailure =>
  error instanceof HttpError
    ? {
        status: error.status,
        reason: error.body.code,
        message: error.body.message,
        retryAfterSeconds: parseRetryAfter(headerValue(error.headers, "retry-after")),
        notApplied: error.status === 429,
      }
    : { status: undefined, message: "no answer arrived" };

function policy(kind: { repeatable: boolean; write: boolean }, retry: RetryOptions = {}, signal = new AbortController().signal) {
  const waits: number[] = [];
  const resolved = resolveRetry({ sleep: async (ms) => void waits.push(ms), ...retry });
  const p: CallPolicy = { method: "items.call", ...kind, signal, retry: resolved };
  return { policy: p, waits };
}

const read = { repeatable: true, write: false };
const send = { repeatable: false, write: true };

describe("callProvider: what is never retried", () => {
  it("never repeats a write that is not repeatable after a 5xx or a dropped connection", async () => {
    scripted.answer(503);
    const { policy: p, waits } = policy(send);
    await expect(callProvider(p, () => request(p.signal), readFailure)).rejects.toMatchObject({
      code: "provider_unavailable",
      boundary: "effect_state_unknown",
    });
    scripted.answer("drop");
    await expect(callProvider(p, () => request(p.signal), readFailure)).rejects.toMatchObject({
      code: "effect_state_unknown",
      boundary: "effect_state_unknown",
    });
    expect(scripted.seen).toEqual([503, 0]);
    expect(waits).toEqual([]);
  });

  it("never retries a refusal", async () => {
    scripted.answer(404);
    const { policy: p } = policy(read);
    await expect(callProvider(p, () => request(p.signal), readFailure)).rejects.toMatchObject({ code: "not_found", boundary: "effect_not_started" });
    expect(scripted.seen).toEqual([404]);
  });

  it("does not wait longer than maxDelayMs: a longer Retry-After ends the call rate_limited", async () => {
    scripted.answer({ status: 429, retryAfter: "120" });
    const { policy: p, waits } = policy(read, { maxDelayMs: 10_000 });
    await expect(callProvider(p, () => request(p.signal), readFailure)).rejects.toMatchObject({
      code: "rate_limited",
      retryable: true,
      retryAfterSeconds: 120,
    });
    expect(waits).toEqual([]);
  });

  it("stops after maxAttempts and says how many were made", async () => {
    scripted.answer(500, 500, 500, 500);
    const { policy: p, waits } = policy(read, { maxAttempts: 3, baseDelayMs: 100 });
    const error = await callProvider(p, () => request(p.signal), readFailure).catch((e: unknown) => e);
    expect(ToolError.is(error, "provider_unavailable") && error.message).toMatch(/HTTP 500 status_500: refused with 500 \(after 3 attempts\)$/);
    expect(waits).toEqual([100, 200]);
    expect(scripted.seen).toEqual([500, 500, 500]);
  });

  it("is cancelled, not retried, once the call's signal aborts; a ToolError from the request passes through", async () => {
    const controller = new AbortController();
    scripted.answer(503);
    const { policy: p } = policy(read, {}, controller.signal);
    await expect(callProvider(p, () => (controller.abort(), request(p.signal)), readFailure)).rejects.toMatchObject({
      code: "cancelled",
      boundary: "effect_failed",
    });
    const own = new ToolError("invalid_input", "the tool's own refusal");
    const { policy: fresh } = policy(read);
    await expect(callProvider(fresh, () => Promise.reject(own), readFailure)).rejects.toBe(own);
  });

  it("rejects with cancelled when the call is cancelled during the default wait", async () => {
    const controller = new AbortController();
    scripted.answer({ status: 429, retryAfter: "5" });
    const p: CallPolicy = { method: "items.call", ...read, signal: controller.signal, retry: resolveRetry({}) };
    setTimeout(() => controller.abort(), 50);
    await expect(callProvider(p, () => request(p.signal), readFailure)).rejects.toMatchObject({ code: "cancelled" });
    expect(scripted.seen).toEqual([429]);
  });
});

describe("callProvider: what is retried", () => {
  it("retries a read after 429 honouring Retry-After, and after a 5xx and a dropped connection with backoff", async () => {
    scripted.answer({ status: 429, retryAfter: "3" }, 502, "drop", 200);
    const { policy: p, waits } = policy(read, { maxAttempts: 4 });
    await expect(callProvider(p, () => request(p.signal), readFailure)).resolves.toEqual({ ok: true });
    expect(waits).toEqual([3000, 500, 1000]);
    expect(scripted.seen).toEqual([429, 502, 0, 200]);
  });

  it("retries a write that is not repeatable only where the provider said it applied nothing", async () => {
    scripted.answer({ status: 429, retryAfter: "1" }, 200);
    const { policy: p, waits } = policy(send);
    await expect(callProvider(p, () => request(p.signal), readFailure)).resolves.toEqual({ ok: true });
    expect(waits).toEqual([1000]);
    scripted.answer(429, 200);
    const strict = (error: unknown): ProviderFailure => ({ ...readFailure(error), notApplied: false });
    await expect(callProvider(p, () => request(p.signal), strict)).rejects.toMatchObject({ code: "rate_limited", boundary: "effect_not_started" });
    expect(scripted.seen).toEqual([429, 200, 429]);
  });
});
