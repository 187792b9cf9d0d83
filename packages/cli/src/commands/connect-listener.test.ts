// The loopback listener is reachable by every process on the machine: what they send must not end,
// crash or take over the wait for the browser's redirect.
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { listenForRedirect } from "./connect-listener.js";

/** One raw request (what a hostile local process can send; no client library would). */
function raw(port: number, requestLine: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let got = "";
    socket.on("data", (d) => (got += d.toString()));
    socket.on("error", () => undefined);
    socket.on("close", () => resolve(got));
    setTimeout(() => socket.destroy(), 2000).unref(); // no answer: what was got so far
    socket.write(`${requestLine}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  });
}

describe("the redirect listener under hostile local requests", () => {
  it("a request target no URL parser accepts gets 400; the process does not crash and the real redirect is still taken", async () => {
    const listener = await listenForRedirect();
    const port = Number(new URL(listener.redirectUri).port);
    const crashes: unknown[] = [];
    const onCrash = (error: unknown) => crashes.push(error);
    process.on("uncaughtException", onCrash);
    try {
      const waited = listener.wait(5000, () => "received");
      for (const target of ["GET http://[/callback HTTP/1.1", "GET //[/callback HTTP/1.1", "GET http://a:99999/callback HTTP/1.1"]) {
        expect(await raw(port, target)).toMatch(/^HTTP\/1\.1 400 /);
      }
      const real = await fetch(`${listener.redirectUri}?code=c1&state=s1`);
      expect(real.status).toBe(200);
      expect((await waited)?.get("code")).toBe("c1");
      expect(crashes).toEqual([]);
    } finally {
      process.off("uncaughtException", onCrash);
      await listener.close();
    }
  });
});
