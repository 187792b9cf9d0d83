// The live queue (server-sent events), the signed webhook (a loopback receiver checks every
// signature) and the server itself (127.0.0.1 only, the Host header checked on the wire).
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { HOST, pendingRequest, signedIn, type Person } from "./fixtures/browser.js";
import { call, openDesk, skipPostgres, type Desk } from "./fixtures/desk.js";
import { startConsole } from "./server.js";

const SECRET = "webhook-secret-for-the-console-tests-0123456789";
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const memo = (subject: string) => ({ to: ["ops@example.test", "cfo@example.test"], subject, body: "BODY-ONLY-FOR-THE-HUMAN" });

/**
 * A response's server-sent events, read as they come. `read` waits (at most `ms`) for `want` events named
 * `name`, skipping others; `ended` says whether the server closed the stream.
 */
function sse(response: Response) {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let ended = false;
  // A read still pending when a deadline passed is kept for the next `read`, so no chunk is lost.
  let pending: ReturnType<typeof reader.read> | undefined;
  return {
    get ended() {
      return ended;
    },
    async read(name: string, want: number, ms = 20_000): Promise<string[]> {
      const found: string[] = [];
      const deadline = Date.now() + ms;
      for (;;) {
        for (let at = buffer.indexOf("\n\n"); at >= 0 && found.length < want; at = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          if (block.includes(`event: ${name}\n`)) found.push(/^data: (.*)$/m.exec(block)?.[1] ?? "");
        }
        if (found.length >= want || ended || Date.now() >= deadline) return found;
        pending ??= reader.read();
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), deadline - Date.now())));
        const chunk = await Promise.race([pending, late]).finally(() => clearTimeout(timer));
        if (!chunk) return found;
        pending = undefined;
        if (chunk.done) ended = true;
        else buffer += decoder.decode(chunk.value, { stream: true });
      }
    },
  };
}

const counts = (data: string[]) => data.map((d) => JSON.parse(d) as { pending: number });

interface Delivery {
  readonly body: string;
  readonly signature: string | undefined;
  readonly event: string | undefined;
}

/** A loopback webhook receiver: records every delivery; `answer` picks each response's status (or hangs with 0). */
async function receiver(answer: (n: number) => number): Promise<{ url: string; deliveries: Delivery[] }> {
  const deliveries: Delivery[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      deliveries.push({
        body,
        signature: req.headers["x-toolgate-signature"] as string | undefined,
        event: req.headers["x-toolgate-event"] as string | undefined,
      });
      const status = answer(deliveries.length);
      if (status === 0) return; // hang
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries };
}

const verified = (d: Delivery) => {
  const expected = Buffer.from(`sha256=${createHmac("sha256", SECRET).update(d.body).digest("hex")}`);
  const given = Buffer.from(d.signature ?? "");
  return given.length === expected.length && timingSafeEqual(given, expected);
};

async function until(check: () => boolean, ms = 5000) {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return check();
}

/** The page's event stream, as the signed-in person's browser opens it; closed after the test. */
async function openEvents(desk: Desk, who: Person): Promise<Response> {
  const controller = new AbortController();
  cleanups.push(() => controller.abort());
  return desk.app.request("/events", { headers: { host: HOST, cookie: `tg_session=${who.cookies.get("tg_session")}` }, signal: controller.signal });
}

describe("the live queue", () => {
  it("pushes an `approvals` event when a request arrives and when one is decided", async () => {
    const desk = await openDesk();
    cleanups.push(() => desk.close());
    const alice = await signedIn(desk, "alice", "approver");
    const stream = await openEvents(desk, alice);
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = sse(stream);
    expect(await events.read("ready", 1)).toEqual(["{}"]); // subscribed
    const id = await pendingRequest(desk, memo("live"));
    expect(counts(await events.read("approvals", 1))).toEqual([{ pending: 1 }]);
    await alice.post(`/approvals/${id}/deny`, { csrf: await alice.csrf(), reason: "no" });
    expect(counts(await events.read("approvals", 1))).toEqual([{ pending: 0 }]);
  });

  it.each([
    ["sqlite", false],
    ["postgres", skipPostgres],
  ] as const)(
    "shares the queue with every worker on the %s journal: another worker's request appears live, and its retry runs after the console's approval",
    async (store, skip) => {
      if (skip) return void expect(skip).toBe(true);
      const desk = await openDesk({ store });
      cleanups.push(() => desk.close());
      const worker = await desk.worker();
      cleanups.push(() => worker.close());
      const alice = await signedIn(desk, "alice", "approver");
      const stream = await openEvents(desk, alice);
      const events = sse(stream);
      expect(await events.read("ready", 1)).toEqual(["{}"]); // subscribed
      const input = memo("from the other worker");
      const first = await worker.gate.invoke("desk.send_memo", input, call);
      if (first.status !== "approval_required") throw new Error(first.status);
      expect(counts(await events.read("approvals", 1))).toEqual([{ pending: 1 }]);
      expect(await (await alice.get("/approvals")).text()).toContain(`data-request-id="${first.requestId}"`);
      expect((await alice.post(`/approvals/${first.requestId}/approve`, { csrf: await alice.csrf(), ttl: "10" })).status).toBe(303);
      const retried = await worker.gate.invoke("desk.send_memo", input, call);
      expect(retried.status).toBe("ok");
      expect([worker.runs.memos.length, desk.runs.memos.length]).toEqual([1, 0]);
    },
  );

  it("ends the stream of an operator disabled (or signed out) meanwhile, sending nothing more", async () => {
    const desk = await openDesk();
    cleanups.push(() => desk.close());
    const alice = await signedIn(desk, "alice", "approver");
    const events = sse(await openEvents(desk, alice));
    expect(await events.read("ready", 1)).toEqual(["{}"]); // subscribed
    await desk.gate.authority.operators.disable("alice", desk.gate.authority.owner());
    await pendingRequest(desk, memo("after the disable"));
    expect(await events.read("approvals", 1)).toEqual([]);
    expect(events.ended, "the stream stayed open, only quiet").toBe(true);
  });

  it("needs a session: without one the stream redirects to sign-in", async () => {
    const desk = await openDesk();
    cleanups.push(() => desk.close());
    const r = await desk.app.request("/events", { headers: { host: HOST } });
    expect([r.status, r.headers.get("location")]).toEqual([303, "/login"]);
  });
});

describe("the webhook", () => {
  it("posts each new request once, signed over the raw body, with ids and summary only", async () => {
    const hook = await receiver(() => 204);
    const desk = await openDesk({ console: { webhook: { url: hook.url, secret: SECRET }, baseUrl: "http://127.0.0.1:7878" } });
    cleanups.push(() => desk.close());
    const id = await pendingRequest(desk, memo("quarterly numbers"));
    expect(await until(() => hook.deliveries.length >= 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 300)); // more polls: still one delivery
    expect(hook.deliveries).toHaveLength(1);
    const [d] = hook.deliveries;
    expect(verified(d!)).toBe(true);
    expect(d!.event).toBe("approval.requested");
    const body = JSON.parse(d!.body) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["consoleUrl", "expiresAt", "requestId", "sentAt", "summary", "toolId", "type"]);
    expect(body).toMatchObject({ type: "approval.requested", requestId: id, toolId: "desk.send_memo", consoleUrl: `http://127.0.0.1:7878/approvals#${id}` });
    expect(body.summary).toContain("quarterly numbers");
    // The preview's details and body stay in the console.
    expect(d!.body).not.toContain("BODY-ONLY-FOR-THE-HUMAN");
    expect(d!.body).not.toContain("cfo@example.test");
    // A body altered in transit no longer matches its signature.
    expect(verified({ ...d!, body: d!.body.replace("quarterly", "Quarterly") })).toBe(false);
  });

  it("retries a failed delivery with backoff, and a receiver that hangs never blocks the console", async () => {
    const flaky = await receiver((n) => (n === 1 ? 503 : 200));
    const desk = await openDesk({ console: { webhook: { url: flaky.url, secret: SECRET, backoffMs: 50 } } });
    cleanups.push(() => desk.close());
    await pendingRequest(desk, memo("retry me"));
    expect(await until(() => flaky.deliveries.length >= 2)).toBe(true);
    expect(flaky.deliveries[0]!.body).toBe(flaky.deliveries[1]!.body);
    expect(flaky.deliveries.every(verified)).toBe(true);

    const stuck = await receiver(() => 0);
    const failures: string[] = [];
    const slow = await openDesk({
      console: { webhook: { url: stuck.url, secret: SECRET, timeoutMs: 200, attempts: 2, backoffMs: 20, onFailure: (id) => failures.push(id) } },
    });
    cleanups.push(() => slow.close());
    const alice = await signedIn(slow, "alice", "approver");
    const id = await pendingRequest(slow, memo("stuck"));
    expect(await until(() => stuck.deliveries.length >= 1)).toBe(true);
    const started = Date.now();
    const page = await alice.get("/approvals");
    expect(page.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(150);
    expect(await until(() => failures.length === 1)).toBe(true);
    expect(failures).toEqual([id]);
  });

  it("refuses a webhook without a usable secret or URL at start-up", async () => {
    await expect(openDesk({ console: { webhook: { url: "http://127.0.0.1:1/x", secret: "short" } } })).rejects.toMatchObject({
      code: "config_invalid",
      message: expect.stringMatching(/secret/),
    });
    await expect(openDesk({ console: { webhook: { url: "file:///etc/passwd", secret: SECRET } } })).rejects.toMatchObject({
      code: "config_invalid",
      message: expect.stringMatching(/URL/),
    });
  });
});

describe("startConsole", () => {
  it("listens on 127.0.0.1 only and checks the Host header on the wire", async () => {
    const desk = await openDesk();
    cleanups.push(() => desk.close());
    const running = await startConsole({ gate: desk.gate, port: 0 });
    cleanups.push(() => running.close());
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ok = await fetch(`${running.url}/login`);
    expect(ok.status).toBe(200);
    const rebound = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port: running.port, path: "/login", headers: { host: `attacker.test:${running.port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end();
    });
    expect(rebound).toBe(403);
    const other = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
    if (other) await expect(fetch(`http://${other}:${running.port}/login`)).rejects.toThrow();
    else expect(other).toBeUndefined();
  });

  it("refuses any other address to listen on", async () => {
    const desk = await openDesk();
    cleanups.push(() => desk.close());
    await expect(startConsole({ gate: desk.gate, host: "0.0.0.0" as never })).rejects.toMatchObject({ code: "config_invalid" });
    await expect(startConsole({ gate: desk.gate, port: 70000 })).rejects.toMatchObject({ code: "config_invalid" });
  });
});
