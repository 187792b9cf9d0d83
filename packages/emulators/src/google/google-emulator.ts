import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { CalendarStore, type CalendarFixture, type CalendarNotification } from "./calendar/calendar-store.js";
import { calendarRoutes } from "./calendar/calendar-routes.js";
import { FaultTable, type FaultRule, type InjectedFault } from "./faults.js";
import type { GmailFixture, GmailMessageSeed, SentMessage } from "./gmail/gmail-fixture.js";
import { Mailbox } from "./gmail/gmail-mailbox.js";
import { gmailRoutes } from "./gmail/gmail-routes.js";
import { ApiError, parseJsonBody, readBody, sendEmpty, sendJson } from "./http.js";
import { OAuthServer, type AuthorizeOptions, type OAuthClientCredentials, type OAuthStats } from "./oauth.js";
import { GOOGLE_AUTHORIZE_PATH, googleAuthorizeEndpoint } from "./oauth-authorize.js";
import type { Route } from "./routes.js";
import { METHOD_SCOPES, type GoogleEndpointId } from "./scopes.js";
import type { calendar_v3 } from "@googleapis/calendar";

export interface StartGoogleEmulatorOptions {
  /** Port on 127.0.0.1; default 0 (any free port). */
  readonly port?: number;
  /** Milliseconds since the epoch, for token expiry and timestamps; default `Date.now`. */
  readonly clock?: () => number;
  /** The mailbox's starting state. */
  readonly gmail?: GmailFixture;
  /** The calendars' starting state. */
  readonly calendar?: CalendarFixture;
}

/** One request the emulator answered (or dropped), for tests. */
export interface EmulatorRequest {
  readonly endpoint: GoogleEndpointId | "unknown";
  readonly verb: string;
  readonly path: string;
  /** The HTTP status sent, or `dropped` when the connection was destroyed instead. */
  readonly status: number | "dropped";
}

/** What tests can read of the mailbox. */
export interface GmailInspector {
  readonly address: string;
  /** Messages really sent, oldest first (messages.send and drafts.send). */
  readonly sent: readonly SentMessage[];
  readonly messageCount: number;
  labelIdsOf(messageId: string): readonly string[] | undefined;
  draftIds(): readonly string[];
  /** Add a message as if it had arrived; returns its id. */
  deliver(seed: GmailMessageSeed): string;
}

/** What tests can read of the calendars. */
export interface CalendarInspector {
  readonly owner: string;
  /** Every stored event of a calendar, cancelled ones included. */
  events(calendarId?: string): readonly calendar_v3.Schema$Event[];
  /** Invitations and updates that would have been emailed to attendees. */
  readonly notifications: readonly CalendarNotification[];
}

/**
 * A running Google emulator on 127.0.0.1: one OAuth authorization server, one Gmail mailbox and one
 * account's calendars, in memory. Point the real clients at `url` (`rootUrl`) and OAuth at
 * `tokenUrl`.
 */
export interface GoogleEmulator {
  /** `http://127.0.0.1:<port>/`: the `rootUrl` for `@googleapis/gmail` and `@googleapis/calendar`. */
  readonly url: string;
  readonly port: number;
  /** The OAuth authorization endpoint (`/o/oauth2/v2/auth`): a consent page, PKCE S256, loopback redirects. */
  readonly authorizeUrl: string;
  /** The OAuth token endpoint (authorization_code and refresh_token grants). */
  readonly tokenUrl: string;
  /** The OAuth revocation endpoint. */
  readonly revokeUrl: string;
  /** The OAuth client registered at start. */
  readonly client: OAuthClientCredentials;
  /** Register another OAuth client (`redirectUris`: loopback URIs, any port; default `http://127.0.0.1/callback`, `http://[::1]/callback`). */
  registerClient(credentials?: Partial<OAuthClientCredentials> & { readonly redirectUris?: readonly string[] }): OAuthClientCredentials;
  /** The consent screen: a user grants `scopes`; exchange the returned code at `tokenUrl`. */
  authorize(options: AuthorizeOptions): { readonly code: string };
  /** Expire every access token now; refresh tokens stay valid. */
  expireAccessTokens(): void;
  /** Revoke the grant a token belongs to, as the user would from their account page. */
  revoke(token: string): boolean;
  readonly oauthStats: OAuthStats;
  readonly gmail: GmailInspector;
  readonly calendar: CalendarInspector;
  /** Every request so far, in arrival order. */
  readonly requests: readonly EmulatorRequest[];
  /** Inject a fault into matching requests (see `FaultRule`). */
  inject(rule: FaultRule): InjectedFault;
  clearFaults(): void;
  /**
   * Put Gmail and Calendar back to their seeded state (or to new fixtures), clear faults and the
   * request log. OAuth clients and grants are kept, so connections stay valid.
   */
  reset(fixtures?: { readonly gmail?: GmailFixture; readonly calendar?: CalendarFixture }): void;
  close(): Promise<void>;
}

/**
 * Start the Google emulator. It serves, on one port: `GET|POST /o/oauth2/v2/auth` (the consent
 * page), `POST /token` and `POST /revoke` (OAuth),
 * Gmail v1 under `/gmail/v1/users/{userId}/…` and Calendar v3 under `/calendar/v3/…`, checking
 * every API call's bearer token (401 when unknown, expired or revoked) and scopes (403
 * `insufficientPermissions` when the token holds none of the scopes Google accepts for the method).
 *
 * ```ts
 * const emulator = await startGoogleEmulator({ gmail: { messages: [{ from: "a@example.test", subject: "Hi", body: "Hello" }] } });
 * const oauth = new OAuth2Client({ clientId: emulator.client.clientId, clientSecret: emulator.client.clientSecret, endpoints: { oauth2TokenUrl: emulator.tokenUrl } });
 * const { tokens } = await oauth.getToken(emulator.authorize({ scopes: ["https://www.googleapis.com/auth/gmail.readonly"] }).code);
 * oauth.setCredentials(tokens);
 * const mail = gmail({ version: "v1", auth: oauth, rootUrl: emulator.url });
 * ```
 */
export async function startGoogleEmulator(options: StartGoogleEmulatorOptions = {}): Promise<GoogleEmulator> {
  const clock = options.clock ?? Date.now;
  const oauth = new OAuthServer(clock);
  let mailbox = new Mailbox(options.gmail ?? {}, clock);
  let calendars = new CalendarStore(options.calendar ?? {}, clock);
  const routes: Route[] = [...gmailRoutes(() => mailbox), ...calendarRoutes(() => calendars)];
  const faults = new FaultTable();
  const requests: EmulatorRequest[] = [];
  const consent = googleAuthorizeEndpoint(oauth, clock);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const verb = (req.method ?? "GET").toUpperCase();
    const record = (endpoint: EmulatorRequest["endpoint"], status: EmulatorRequest["status"]): void => {
      requests.push({ endpoint, verb, path: url.pathname, status });
    };
    const drop = (endpoint: EmulatorRequest["endpoint"]): void => {
      record(endpoint, "dropped");
      req.socket.destroy();
    };
    const fail = (endpoint: EmulatorRequest["endpoint"], error: ApiError): void => {
      record(endpoint, error.status);
      sendJson(res, error.status, error.body(), { ...error.headers });
    };

    let body: Buffer;
    try {
      body = await readBody(req);
    } catch (error) {
      return fail("unknown", error instanceof ApiError ? error : new ApiError(400, "badRequest", "Bad Request"));
    }

    if (url.pathname === GOOGLE_AUTHORIZE_PATH) return record("oauth2.authorize", consent(verb, url, body, res));
    const oauthEndpoint: GoogleEndpointId | undefined =
      verb === "POST" && url.pathname === "/token" ? "oauth2.token" : verb === "POST" && url.pathname === "/revoke" ? "oauth2.revoke" : undefined;
    if (oauthEndpoint) {
      if (!(await applyPreFaults(oauthEndpoint))) return;
      const dropAfter = faults.take(oauthEndpoint, ["drop_after_effect"]).length > 0;
      if (oauthEndpoint === "oauth2.token") oauth.handleToken(req, dropAfter ? discard(res) : res, body);
      else oauth.handleRevoke(url, dropAfter ? discard(res) : res, body);
      if (dropAfter) return drop(oauthEndpoint);
      return record(oauthEndpoint, res.statusCode);
    }

    let route: Route | undefined;
    let match: RegExpExecArray | null = null;
    for (const candidate of routes) {
      if (candidate.verb !== verb) continue;
      match = candidate.pattern.exec(url.pathname);
      if (match) {
        route = candidate;
        break;
      }
    }
    if (!route || !match) return fail("unknown", new ApiError(404, "notFound", `Not Found: ${verb} ${url.pathname}`));
    const id = route.id;

    // Authentication, then authorization, as Google's front end does.
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
    if (!bearer) {
      return fail(
        id,
        new ApiError(
          401,
          "required",
          "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
          {
            location: "Authorization",
            locationType: "header",
            headers: { "www-authenticate": 'Bearer realm="https://accounts.google.com/"' },
          },
        ),
      );
    }
    const verdict = oauth.verify(bearer);
    if (!verdict.ok) {
      return fail(
        id,
        new ApiError(
          401,
          "authError",
          "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
          {
            location: "Authorization",
            locationType: "header",
            headers: { "www-authenticate": 'Bearer realm="https://accounts.google.com/", error="invalid_token"' },
          },
        ),
      );
    }
    const accepted: readonly string[] = METHOD_SCOPES[id];
    if (!verdict.scopes.some((s) => accepted.includes(s))) {
      return fail(
        id,
        new ApiError(403, "insufficientPermissions", "Request had insufficient authentication scopes.", {
          headers: { "www-authenticate": `Bearer realm="https://accounts.google.com/", error="insufficient_scope", scope="${accepted.join(" ")}"` },
          details: [
            {
              "@type": "type.googleapis.com/google.rpc.ErrorInfo",
              reason: "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
              domain: "googleapis.com",
              metadata: { method: id, service: id.split(".")[0] + ".googleapis.com" },
            },
          ],
        }),
      );
    }
    if (!(await applyPreFaults(id))) return;

    let answer;
    try {
      const request = {
        url,
        params: match.slice(1).map((p) => decodeURIComponent(p)),
        body: verb === "GET" || verb === "DELETE" ? {} : parseJsonBody(body),
        headers: req.headers,
        scopes: verdict.scopes,
      };
      await route.prepare?.(request);
      answer = route.handle(request);
    } catch (error) {
      if (error instanceof ApiError) return fail(id, error);
      return fail(id, new ApiError(500, "backendError", "Backend Error"));
    }
    if (faults.take(id, ["drop_after_effect"]).length > 0) return drop(id);
    record(id, answer.status);
    if (answer.body === undefined) sendEmpty(res, answer.status);
    else sendJson(res, answer.status, answer.body);

    /** Latency, drops before the effect, 429 and 5xx; false when the request was answered or dropped. */
    async function applyPreFaults(endpoint: GoogleEndpointId): Promise<boolean> {
      for (const rule of faults.take(endpoint, ["latency"])) if (rule.kind === "latency") await delay(rule.ms);
      if (faults.take(endpoint, ["drop_before_effect"]).length > 0) {
        drop(endpoint);
        return false;
      }
      const refusal = faults.take(endpoint, ["rate_limit", "server_error"])[0];
      if (refusal?.kind === "rate_limit") {
        const seconds = refusal.retryAfterSeconds ?? 1;
        fail(
          endpoint,
          new ApiError(429, "rateLimitExceeded", "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute per user'.", {
            headers: { "retry-after": String(seconds) },
          }),
        );
        return false;
      }
      if (refusal?.kind === "server_error") {
        const status = refusal.status ?? 503;
        fail(endpoint, new ApiError(status, "backendError", status === 503 ? "The service is currently unavailable." : "Backend Error"));
        return false;
      }
      return true;
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, new ApiError(500, "backendError", "Backend Error").body());
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/`;

  const gmail: GmailInspector = {
    get address() {
      return mailbox.address;
    },
    get sent() {
      return mailbox.sent;
    },
    get messageCount() {
      return mailbox.messageCount;
    },
    labelIdsOf: (id) => mailbox.labelIdsOf(id),
    draftIds: () => mailbox.draftIds(),
    deliver: (seed) => mailbox.seed(seed),
  };
  const calendar: CalendarInspector = {
    get owner() {
      return calendars.owner;
    },
    events: (calendarId) => calendars.events(calendarId),
    get notifications() {
      return calendars.notifications;
    },
  };

  return {
    url,
    port,
    authorizeUrl: `${url}${GOOGLE_AUTHORIZE_PATH.slice(1)}`,
    tokenUrl: `${url}token`,
    revokeUrl: `${url}revoke`,
    client: oauth.defaultClient,
    registerClient: (credentials) => oauth.registerClient(credentials),
    authorize: (authorizeOptions) => oauth.authorize(authorizeOptions),
    expireAccessTokens: () => oauth.expireAccessTokens(),
    revoke: (token) => oauth.revoke(token),
    get oauthStats() {
      return oauth.stats;
    },
    gmail,
    calendar,
    get requests() {
      return [...requests];
    },
    inject: (rule) => faults.add(rule),
    reset: (fixtures = {}) => {
      mailbox = new Mailbox(fixtures.gmail ?? options.gmail ?? {}, clock);
      calendars = new CalendarStore(fixtures.calendar ?? options.calendar ?? {}, clock);
      faults.clear();
      requests.length = 0;
    },
    clearFaults: () => faults.clear(),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A response stand-in that swallows what a handler writes (the connection is about to drop). */
function discard(res: ServerResponse): ServerResponse {
  return new Proxy(res, {
    get(target, key) {
      if (key === "writeHead" || key === "end" || key === "write" || key === "setHeader") return () => target;
      const value: unknown = Reflect.get(target, key);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
