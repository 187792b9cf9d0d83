/** The error codes the Notion API answers with, as its own documentation names them. */
export type NotionApiErrorCode =
  | "unauthorized"
  | "restricted_resource"
  | "object_not_found"
  | "rate_limited"
  | "invalid_json"
  | "invalid_request_url"
  | "invalid_request"
  | "validation_error"
  | "missing_version"
  | "conflict_error"
  | "internal_server_error"
  | "service_unavailable";

const STATUS: Record<NotionApiErrorCode, number> = {
  unauthorized: 401,
  restricted_resource: 403,
  object_not_found: 404,
  rate_limited: 429,
  invalid_json: 400,
  invalid_request_url: 400,
  invalid_request: 400,
  validation_error: 400,
  missing_version: 400,
  conflict_error: 409,
  internal_server_error: 500,
  service_unavailable: 503,
};

/** An error the emulator answers with, in Notion's `{ object: "error", status, code, message }` shape. */
export class NotionApiError extends Error {
  readonly status: number;
  readonly code: NotionApiErrorCode;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: NotionApiErrorCode, message: string, headers: Record<string, string> = {}, status?: number) {
    super(message);
    this.code = code;
    this.status = status ?? STATUS[code];
    this.headers = headers;
  }

  body(requestId: string): Record<string, unknown> {
    return { object: "error", status: this.status, code: this.code, message: this.message, request_id: requestId };
  }
}

/** Notion's answer for anything the integration cannot see: the same whether it exists or not. */
export function notFound(kind: "page" | "block" | "database" | "data_source" | "comment", id: string): NotionApiError {
  const noun = kind === "data_source" ? "data source" : kind;
  return new NotionApiError(
    "object_not_found",
    `Could not find ${noun} with ID: ${id}. Make sure the relevant pages and databases are shared with your integration.`,
  );
}

export function invalid(message: string): NotionApiError {
  return new NotionApiError("validation_error", message);
}

/** Notion's answer to an edit of a page or block in the trash. */
export function archived(): NotionApiError {
  return invalid("Can't edit block that is archived. You must unarchive the block before editing.");
}

export function restricted(): NotionApiError {
  return new NotionApiError("restricted_resource", "Insufficient permissions for this endpoint.");
}
