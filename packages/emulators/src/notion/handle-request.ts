/**
 * The request pipeline, once for every route: read the body, hold it for latency, parse it, the
 * OAuth token endpoint, then version and token, the route and its ids, injected faults, the
 * capability, the handler; every refusal is answered in Notion's error shape, and every request
 * is recorded.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import { isRecord } from "../is-record.js";
import { identifyCaller } from "./caller.js";
import { normalizeId } from "./convert.js";
import { invalid, NotionApiError, restricted } from "./errors.js";
import { faultError, REFUSING_FAULTS, type FaultList, type NotionFault } from "./faults.js";
import { notionAuthorizeEndpoint, NOTION_AUTHORIZE_PATH } from "./oauth-authorize.js";
import { exchangeOAuthToken } from "./oauth-token.js";
import type { NotionRoute } from "./routes/route.js";
import type { NotionWorld } from "./world.js";

/** One request the emulator saw, for tests to inspect. Never holds the token. */
export interface NotionRequestRecord {
  readonly method: string;
  /** The path after `/v1`, without the query. */
  readonly path: string;
  readonly status: number | "dropped";
  readonly integrationId: string | undefined;
  readonly fault: NotionFault["kind"] | undefined;
}

/** What the pipeline works on; `latencyMs` is read at each request, as `setLatency` last set it. */
export interface RequestHandlerOptions {
  readonly world: NotionWorld;
  readonly routes: readonly NotionRoute[];
  readonly faults: FaultList;
  readonly requests: NotionRequestRecord[];
  readonly latencyMs: () => number;
  /** Milliseconds since the epoch, for the lifetime of authorization codes; default `Date.now`. */
  readonly clock?: () => number;
}

export function createRequestHandler(options: RequestHandlerOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { world, routes, faults, requests } = options;
  const consent = notionAuthorizeEndpoint(world, options.clock ?? Date.now);
  return async (req, res) => {
    const method = (req.method ?? "GET").toUpperCase();
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname.startsWith("/v1/") ? url.pathname.slice(3) : url.pathname;
    const requestId = randomUUID();
    let integrationId: string | undefined;
    let faultKind: NotionFault["kind"] | undefined;
    const record = (status: number | "dropped") => requests.push({ method, path, status, integrationId, fault: faultKind });
    const send = (status: number, body: object, headers: Record<string, string> = {}) => {
      record(status);
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", "x-request-id": requestId, ...headers });
      res.end(JSON.stringify(body));
    };

    const raw = await readBody(req);
    if (!(await hold(req, res, (faults.take(method, path, ["latency"])?.latencyMs ?? 0) + options.latencyMs()))) {
      record("dropped");
      return; // the client gave up: nothing happens
    }
    if (path === NOTION_AUTHORIZE_PATH) {
      record(consent(method, url, Buffer.from(raw, "utf8"), res));
      return;
    }
    try {
      const body = parseBody(raw);
      if (method === "POST" && path === "/oauth/token") {
        const answer = exchangeOAuthToken(world, req.headers.authorization, body, (options.clock ?? Date.now)());
        return send(answer.status, answer.body);
      }
      const caller = identifyCaller(req.headers, world);
      integrationId = caller.integration.id;
      const { route, params } = matchRoute(routes, method, path);
      const fault = faults.take(method, path, [...REFUSING_FAULTS, "drop_after_effect"]);
      faultKind = fault?.kind;
      const refusal = faultError(fault);
      if (refusal) throw refusal;
      if (route.capability !== undefined && !caller.integration.capabilities.has(route.capability)) throw restricted();
      let result: object;
      try {
        result = route.handle(caller, params, body, url.searchParams);
      } catch (error) {
        throw error instanceof NotionApiError ? error : new NotionApiError("internal_server_error", "Unexpected error occurred.", {}, 500);
      }
      if (fault?.kind === "drop_after_effect") {
        record("dropped");
        res.socket?.destroy();
        return;
      }
      send(200, structuredClone(result));
    } catch (error) {
      if (!(error instanceof NotionApiError)) throw error;
      send(error.status, error.body(requestId), error.headers);
    }
  };
}

/** The route for a request and its path ids, decoded; 405 for a known path with another method. */
function matchRoute(routes: readonly NotionRoute[], method: string, path: string): { route: NotionRoute; params: string[] } {
  const route = routes.find((r) => r.method === method && r.pattern.test(path));
  if (!route) {
    const known = routes.some((r) => r.pattern.test(path));
    throw known
      ? new NotionApiError("invalid_request", `Unsupported request method: ${method}.`, {}, 405)
      : new NotionApiError("invalid_request_url", "Invalid request URL.");
  }
  const params = route.pattern
    .exec(path)!
    .slice(1)
    .map((p) => decodeURIComponent(p));
  for (const param of params) {
    if (normalizeId(param) === undefined) {
      throw invalid(`path failed validation: path.id should be a valid uuid, instead was \`${JSON.stringify(param).slice(0, 80)}\`.`);
    }
  }
  return { route, params };
}

/** Hold the request `ms` milliseconds; false when the client went away meanwhile. */
async function hold(req: IncomingMessage, res: ServerResponse, ms: number): Promise<boolean> {
  if (ms <= 0) return true;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    res.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return !(req.socket.destroyed || res.closed);
}

/** A JSON object body; an empty body is `{}`. */
function parseBody(raw: string): Record<string, unknown> {
  if (raw.length === 0) return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    if (!isRecord(parsed)) throw new Error("not an object");
    return parsed;
  } catch {
    throw new NotionApiError("invalid_json", "Error parsing JSON body.");
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
