import type { gmail_v1 } from "@googleapis/gmail";
import { ApiError, intParam, offsetOf, pageTokenOf } from "../http.js";
import { ok, type Route, type RouteRequest } from "../routes.js";
import type { Mailbox } from "./gmail-mailbox.js";

const USER = "([^/]+)";
const ID = "([^/]+)";
const base = (rest: string): RegExp => new RegExp(`^/gmail/v1/users/${USER}${rest}$`);

/** Gmail v1 routes over one current(). */
export function gmailRoutes(current: () => Mailbox): Route[] {
  /** `me` or the mailbox's own address; anyone else is a delegation Google would refuse. */
  const user = (request: RouteRequest): void => {
    const mailbox = current();
    const userId = request.params[0] ?? "";
    if (userId !== "me" && userId.toLowerCase() !== mailbox.address) throw new ApiError(403, "forbidden", "Delegation denied for " + mailbox.address);
  };
  const page = <T>(items: readonly T[], params: URLSearchParams, fallback: number, max: number): { items: T[]; nextPageToken?: string } => {
    const size = Math.max(1, intParam(params, "maxResults", fallback, max));
    const offset = offsetOf(params.get("pageToken"));
    const slice = items.slice(offset, offset + size);
    return { items: slice, ...(offset + size < items.length ? { nextPageToken: pageTokenOf(offset + size) } : {}) };
  };

  // Every route first has the mailbox parse the messages it will read or store (MIME parsing is asynchronous).
  const prepare = (r: RouteRequest): Promise<void> => current().prepare(r.body);
  const routes: Route[] = [
    {
      verb: "GET",
      pattern: base("/messages"),
      id: "gmail.users.messages.list",
      handle: (r) => {
        user(r);
        const all = current().list(r.url.searchParams, r.scopes);
        const { items, nextPageToken } = page(all, r.url.searchParams, 100, 500);
        const body: gmail_v1.Schema$ListMessagesResponse = {
          ...(items.length > 0 ? { messages: items } : {}),
          ...(nextPageToken ? { nextPageToken } : {}),
          resultSizeEstimate: all.length,
        };
        return ok(body);
      },
    },
    {
      verb: "GET",
      pattern: base(`/messages/${ID}`),
      id: "gmail.users.messages.get",
      handle: (r) => (user(r), ok(current().get(r.params[1]!, r.url.searchParams, r.scopes) satisfies gmail_v1.Schema$Message)),
    },
    {
      verb: "POST",
      pattern: base("/messages/send"),
      id: "gmail.users.messages.send",
      handle: (r) => (user(r), ok(current().send(r.body) satisfies gmail_v1.Schema$Message)),
    },
    {
      verb: "POST",
      pattern: base(`/messages/${ID}/modify`),
      id: "gmail.users.messages.modify",
      handle: (r) => (user(r), ok(current().modify(r.params[1]!, r.body) satisfies gmail_v1.Schema$Message)),
    },
    {
      verb: "POST",
      pattern: base(`/messages/${ID}/trash`),
      id: "gmail.users.messages.trash",
      handle: (r) => (user(r), ok(current().trash(r.params[1]!) satisfies gmail_v1.Schema$Message)),
    },
    {
      verb: "GET",
      pattern: base(`/threads/${ID}`),
      id: "gmail.users.threads.get",
      handle: (r) => (user(r), ok(current().thread(r.params[1]!, r.url.searchParams, r.scopes) satisfies gmail_v1.Schema$Thread)),
    },
    {
      verb: "POST",
      pattern: base("/drafts"),
      id: "gmail.users.drafts.create",
      handle: (r) => (user(r), ok(current().createDraft(r.body) satisfies gmail_v1.Schema$Draft)),
    },
    {
      verb: "GET",
      pattern: base("/drafts"),
      id: "gmail.users.drafts.list",
      handle: (r) => {
        user(r);
        const all = current().listDrafts();
        const { items, nextPageToken } = page(all, r.url.searchParams, 100, 500);
        const body: gmail_v1.Schema$ListDraftsResponse = {
          ...(items.length > 0 ? { drafts: items } : {}),
          ...(nextPageToken ? { nextPageToken } : {}),
          resultSizeEstimate: all.length,
        };
        return ok(body);
      },
    },
    {
      verb: "POST",
      pattern: base("/drafts/send"),
      id: "gmail.users.drafts.send",
      handle: (r) => (user(r), ok(current().sendDraft(r.body) satisfies gmail_v1.Schema$Message)),
    },
    {
      verb: "GET",
      pattern: base(`/drafts/${ID}`),
      id: "gmail.users.drafts.get",
      handle: (r) => (user(r), ok(current().getDraft(r.params[1]!, r.url.searchParams, r.scopes) satisfies gmail_v1.Schema$Draft)),
    },
    {
      verb: "GET",
      pattern: base("/labels"),
      id: "gmail.users.labels.list",
      handle: (r) => (user(r), ok(current().listLabels() satisfies gmail_v1.Schema$ListLabelsResponse)),
    },
    {
      verb: "POST",
      pattern: base("/labels"),
      id: "gmail.users.labels.create",
      handle: (r) => (user(r), ok(current().createLabel(r.body) satisfies gmail_v1.Schema$Label)),
    },
  ];
  return routes.map((route) => ({ ...route, prepare }));
}
