import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** A one-shot loopback listener for an OAuth redirect (RFC 8252 §7.3), on 127.0.0.1 and an ephemeral port (or `port`). */
export interface RedirectListener {
  /** `http://127.0.0.1:<port>/callback`. */
  readonly redirectUri: string;
  /**
   * The query of the first `GET /callback`, answered with the page `reply` writes for it; any
   * other request gets 404 and does not end the wait. Undefined after `timeoutMs`.
   */
  wait(timeoutMs: number, reply: (params: URLSearchParams) => string): Promise<URLSearchParams | undefined>;
  close(): Promise<void>;
}

const PATH = "/callback";

export async function listenForRedirect(port = 0): Promise<RedirectListener> {
  let onRedirect: ((params: URLSearchParams) => string) | undefined;
  let settle: ((params: URLSearchParams | undefined) => void) | undefined;
  const server = createServer((req, res) => {
    // Any local process can send a request target no URL parser accepts: an answer, never a throw.
    const target = req.url ?? "/";
    if (!URL.canParse(target, "http://127.0.0.1")) {
      res.writeHead(400, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" }).end("bad request\n");
      return;
    }
    const url = new URL(target, "http://127.0.0.1");
    if (req.method !== "GET" || url.pathname !== PATH || !onRedirect || !settle) {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" }).end("not found\n");
      return;
    }
    const text = onRedirect(url.searchParams);
    const done = settle;
    onRedirect = undefined;
    settle = undefined;
    const html = `<!doctype html><html><head><meta charset="utf-8"><title>Toolgate</title></head><body><p>${escapeHtml(text)}</p><p>You can close this window.</p></body></html>`;
    res.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      connection: "close",
      "content-length": Buffer.byteLength(html),
    });
    res.end(html, () => done(url.searchParams));
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return {
    redirectUri: `http://127.0.0.1:${bound}${PATH}`,
    wait(timeoutMs, reply) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          onRedirect = undefined;
          settle = undefined;
          resolve(undefined);
        }, timeoutMs);
        onRedirect = reply;
        settle = (params) => {
          clearTimeout(timer);
          resolve(params);
        };
      });
    },
    close,
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
