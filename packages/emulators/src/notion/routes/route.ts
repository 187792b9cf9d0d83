/** What every Notion API route is, and the list paging and body fields the routes share. */
import type { Caller } from "../caller.js";
import { invalid } from "../errors.js";
import type { NotionCapability } from "../world-model.js";

/** One endpoint: a method and a path pattern (after `/v1`), the capability it needs, and its handler. */
export interface NotionRoute {
  readonly method: string;
  readonly pattern: RegExp;
  readonly capability: NotionCapability | undefined;
  /** The response body; a refusal is thrown as a `NotionApiError`. `params` are the pattern's groups, decoded. */
  readonly handle: (caller: Caller, params: string[], body: Record<string, unknown>, query: URLSearchParams) => object;
}

/** A list page as Notion answers it (without the `object` and `type` fields). */
export interface ListPage<T> {
  results: T[];
  next_cursor: string | null;
  has_more: boolean;
}

/** Notion's cursor paging: the cursor is the id of the first item of the next page. */
export function paginate<T extends { id: string }>(items: readonly T[], cursor: unknown, pageSize: unknown): ListPage<T> {
  const size = pageSize === undefined ? 100 : pageSize;
  if (typeof size !== "number" || !Number.isInteger(size) || size < 1 || size > 100) {
    throw invalid(`body failed validation: page_size should be a number between 1 and 100, instead was \`${JSON.stringify(pageSize)}\`.`);
  }
  let start = 0;
  if (cursor !== undefined && cursor !== null) {
    start = typeof cursor === "string" ? items.findIndex((item) => item.id === cursor) : -1;
    if (start < 0) throw invalid("The start_cursor provided is invalid.");
  }
  const results = items.slice(start, start + size);
  const next = items[start + size];
  return { results, next_cursor: next?.id ?? null, has_more: next !== undefined };
}

/** {@link paginate} for a GET list, whose cursor and page size come in the query string. */
export function paginateQuery<T extends { id: string }>(items: readonly T[], query: URLSearchParams): ListPage<T> {
  return paginate(items, query.get("start_cursor") ?? undefined, query.has("page_size") ? Number(query.get("page_size")) : undefined);
}

/** The trash flag of an update, under its current name `in_trash` or its older one `archived`. */
export function requestedTrash(body: Record<string, unknown>): unknown {
  return body["in_trash"] ?? body["archived"];
}
