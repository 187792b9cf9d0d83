import type { IncomingMessage, ServerResponse } from "node:http";

/** Google's JSON error body (the shape both Gmail v1 and Calendar v3 return). */
export interface GoogleErrorBody {
  readonly error: {
    readonly code: number;
    readonly message: string;
    readonly errors: readonly {
      readonly message: string;
      readonly domain: string;
      readonly reason: string;
      readonly location?: string;
      readonly locationType?: string;
    }[];
    readonly status: string;
    readonly details?: readonly Record<string, unknown>[];
  };
}

const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ALREADY_EXISTS",
  410: "NOT_FOUND",
  412: "FAILED_PRECONDITION",
  413: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** An API failure a route throws; the server turns it into Google's error body. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly extra: Pick<GoogleErrorBody["error"], "details"> & { readonly location?: string; readonly locationType?: string };

  constructor(
    status: number,
    reason: string,
    message: string,
    options: { headers?: Record<string, string>; details?: readonly Record<string, unknown>[]; location?: string; locationType?: string } = {},
  ) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.headers = options.headers ?? {};
    this.extra = {
      ...(options.details ? { details: options.details } : {}),
      ...(options.location ? { location: options.location } : {}),
      ...(options.locationType ? { locationType: options.locationType } : {}),
    };
  }

  body(): GoogleErrorBody {
    const { details, location, locationType } = this.extra;
    return {
      error: {
        code: this.status,
        message: this.message,
        errors: [
          { message: this.message, domain: "global", reason: this.reason, ...(location ? { location } : {}), ...(locationType ? { locationType } : {}) },
        ],
        status: STATUS_NAMES[this.status] ?? "UNKNOWN",
        ...(details ? { details } : {}),
      },
    };
  }
}

export const badRequest = (message: string, reason = "invalid"): ApiError => new ApiError(400, reason, message);
export const notFound = (message = "Requested entity was not found."): ApiError => new ApiError(404, "notFound", message);

/** Largest request body accepted (Gmail's own limit for metadata requests is 35 MB). */
export const MAX_BODY_BYTES = 36 * 1024 * 1024;

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    total += buf.length;
    if (total > MAX_BODY_BYTES) throw new ApiError(413, "uploadTooLarge", "Request payload size exceeds the limit.");
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return {};
  try {
    return JSON.parse(body.toString("utf8")) as unknown;
  } catch {
    throw new ApiError(400, "parseError", "Parse Error");
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=UTF-8", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function sendEmpty(res: ServerResponse, status: number): void {
  res.writeHead(status, { "content-length": 0 });
  res.end();
}

/** Opaque page tokens: an offset, base64url-encoded. */
export function pageTokenOf(offset: number): string {
  return Buffer.from(`offset:${offset}`).toString("base64url");
}

export function offsetOf(token: string | null): number {
  if (token === null || token === "") return 0;
  const text = Buffer.from(token, "base64url").toString("utf8");
  const match = /^offset:(\d{1,9})$/.exec(text);
  if (!match) throw badRequest("Invalid pageToken", "invalidParameter");
  return Number(match[1]);
}

export function intParam(params: URLSearchParams, name: string, fallback: number, max: number): number {
  const raw = params.get(name);
  if (raw === null) return fallback;
  if (!/^\d{1,9}$/.test(raw)) throw badRequest(`Invalid value for ${name}: ${raw}`, "invalidParameter");
  return Math.min(Number(raw), max);
}
