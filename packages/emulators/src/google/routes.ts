import type { IncomingHttpHeaders } from "node:http";
import type { GoogleMethodId } from "./scopes.js";

/** What a route handler sees of one authorized request. */
export interface RouteRequest {
  readonly url: URL;
  /** Path captures, URL-decoded. */
  readonly params: readonly string[];
  /** The JSON body, parsed (`{}` when empty). */
  readonly body: unknown;
  readonly headers: IncomingHttpHeaders;
  /** Scopes of the bearer token that authorized the call. */
  readonly scopes: readonly string[];
}

/** A route's answer; `body` undefined means an empty 204-style answer. */
export interface RouteResponse {
  readonly status: number;
  readonly body?: unknown;
}

/** One emulated REST method. Effects happen inside `handle`, synchronously, before it returns. */
export interface Route {
  readonly verb: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  readonly pattern: RegExp;
  readonly id: GoogleMethodId;
  /** Work that cannot be synchronous (parsing a message's MIME), done before `handle`; no effect. */
  prepare?(request: RouteRequest): Promise<void>;
  handle(request: RouteRequest): RouteResponse;
}

export const ok = (body: unknown): RouteResponse => ({ status: 200, body });
