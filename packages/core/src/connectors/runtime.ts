import type { ConnectorHandle, ConnectorOpenRequest, ConnectorRuntime } from "../context.js";
import { ToolError } from "../errors.js";
import { createRedactor, type SecretLease } from "../redactor.js";
import {
  TokenRefreshError,
  type AccessGrant,
  type ConnectionInfo,
  type ConnectorLogEvent,
  type ConnectorProvider,
  type RefreshedTokens,
  type TokenSet,
  type TokenVault,
} from "./types.js";

/** Refresh an access token when it expires within this many milliseconds. */
export const DEFAULT_REFRESH_LEEWAY_MS = 60_000;
/** How long one refresh may take before the runtime gives up on it. */
export const DEFAULT_REFRESH_TIMEOUT_MS = 30_000;
/** The lifetime assumed for a refreshed token whose provider did not say (`expires_in` absent). */
export const DEFAULT_TOKEN_LIFETIME_MS = 3_600_000;

export interface CreateConnectorRuntimeOptions {
  readonly vault: TokenVault;
  /** One adapter per provider name (`@toolgate/connector-google`'s, a Notion one, …). */
  readonly providers: readonly ConnectorProvider[];
  /**
   * Also told every secret the runtime reads, besides each call's own `registerSecret` — e.g. the
   * application's log redactor.
   */
  readonly registerSecret?: (value: string) => void;
  /** Operator log events; never carry a token. */
  readonly log?: (event: ConnectorLogEvent) => void;
  /** Milliseconds since the epoch; default `Date.now`. Expiry is judged on this clock only. */
  readonly clock?: () => number;
  /** Refresh when the access token expires within this many milliseconds; default 60 000. */
  readonly leewayMs?: number;
  /** Give up on one refresh after this many milliseconds; default 30 000. */
  readonly refreshTimeoutMs?: number;
}

/**
 * The token runtime the gate opens connectors through (`createGate({ connectors })`).
 *
 * `open(request)`, in order:
 * 1. finds the provider adapter (`connector_unavailable` when there is none);
 * 2. chooses the connection serving the call's tenant and principal from the vault's metadata
 *    (see `Connection` for the rule; `connector_unavailable` when none or when ambiguous);
 * 3. checks the manifest's scopes are a subset of the connection's granted scopes —
 *    `scope_missing`, naming the missing scopes, before any token is read;
 * 4. reads the token set and registers every secret in it with the call's redactor;
 * 5. when the access token expires within `leewayMs`, refreshes it: one refresh per connection at
 *    a time (concurrent opens share it), the new token set persisted to the vault before anyone
 *    uses it, the stored refresh token kept when the provider's response leaves it out. No refresh
 *    token, or a revoked grant, is `connector_reauth_required` naming the connection;
 * 6. returns a handle whose `client()` is the adapter's authorized client — never a token string.
 *
 * Errors are `ToolError`s whose messages are built by the runtime and redacted: a provider's
 * response body never reaches a message, a cause or a log event.
 */
export function createConnectorRuntime(options: CreateConnectorRuntimeOptions): ConnectorRuntime {
  if (!options?.vault) throw new ToolError("config_invalid", "createConnectorRuntime needs a vault");
  const { vault } = options;
  const clock = options.clock ?? Date.now;
  const leewayMs = options.leewayMs ?? DEFAULT_REFRESH_LEEWAY_MS;
  const refreshTimeoutMs = options.refreshTimeoutMs ?? DEFAULT_REFRESH_TIMEOUT_MS;
  if (!Number.isFinite(leewayMs) || leewayMs < 0) throw new ToolError("config_invalid", "leewayMs must be a non-negative number");
  if (!Number.isFinite(refreshTimeoutMs) || refreshTimeoutMs <= 0) throw new ToolError("config_invalid", "refreshTimeoutMs must be a positive number");

  const providers = new Map<string, ConnectorProvider>();
  for (const adapter of options.providers ?? []) {
    if (!adapter || typeof adapter.provider !== "string" || typeof adapter.refresh !== "function" || typeof adapter.createClient !== "function") {
      throw new ToolError("config_invalid", "each connector provider needs provider, refresh and createClient");
    }
    if (providers.has(adapter.provider)) throw new ToolError("config_invalid", `two connector providers are named ${adapter.provider}`);
    providers.set(adapter.provider, adapter);
  }

  // What the runtime holds now, so that its own messages and log events are scrubbed too: client
  // secrets for good, an access token until it expires, a refresh token until the connection's
  // next one replaces it. Tokens of connections long gone leave, so the scrubber's cost stays flat.
  const scrubber = createRedactor([], { clock });
  const refreshTokens = new Map<string, SecretLease>();
  const tell = (request: ConnectorOpenRequest | undefined, value: string): void => {
    options.registerSecret?.(value);
    request?.registerSecret(value);
  };
  const rememberSecrets = (request: ConnectorOpenRequest | undefined, values: readonly string[]): void => {
    for (const value of values) {
      if (typeof value !== "string" || value === "") continue;
      scrubber.register(value);
      tell(request, value);
    }
  };
  const rememberTokens = (
    request: ConnectorOpenRequest | undefined,
    connectionId: string,
    tokens: Pick<TokenSet, "accessToken" | "refreshToken" | "expiresAt">,
  ): void => {
    if (tokens.accessToken !== "") {
      // A token of unknown expiry is kept for a default lifetime; every use registers it again.
      const until = Number.isFinite(tokens.expiresAt) && tokens.expiresAt > clock() ? tokens.expiresAt : clock() + DEFAULT_TOKEN_LIFETIME_MS;
      scrubber.register(tokens.accessToken, { until });
      tell(request, tokens.accessToken);
    }
    const refresh = tokens.refreshToken;
    if (refresh !== undefined && refresh !== "") {
      const lease = scrubber.hold(refresh);
      refreshTokens.get(connectionId)?.release();
      refreshTokens.set(connectionId, lease);
      tell(request, refresh);
    }
  };
  for (const adapter of providers.values()) rememberSecrets(undefined, adapter.secrets ?? []);

  const log = (event: Omit<ConnectorLogEvent, "at">): void => {
    if (!options.log) return;
    try {
      options.log(scrubber.redact({ ...event, at: clock() }));
    } catch {
      // a logger's failure is not the call's
    }
  };

  const isFresh = (tokens: TokenSet): boolean => tokens.accessToken !== "" && tokens.expiresAt - leewayMs > clock();

  // One refresh per connection at a time; every caller that finds the token stale joins it.
  const inflight = new Map<string, Promise<TokenSet>>();

  const refresh = (adapter: ConnectorProvider, connection: ConnectionInfo, request: ConnectorOpenRequest): Promise<TokenSet> => {
    let shared = inflight.get(connection.id);
    if (!shared) {
      shared = runRefresh(adapter, connection, request.toolId).finally(() => inflight.delete(connection.id));
      inflight.set(connection.id, shared);
    }
    return untilAborted(shared, request.signal, () => cancelled(request.toolId)).then((tokens) => {
      rememberTokens(request, connection.id, tokens);
      return tokens;
    });
  };

  const runRefresh = async (adapter: ConnectorProvider, connection: ConnectionInfo, toolId: string): Promise<TokenSet> => {
    const current = await vault.readTokens(connection.id);
    if (current === undefined) throw new ToolError("connector_unavailable", `connection ${connection.id} was removed from the vault`);
    rememberTokens(undefined, connection.id, current);
    if (isFresh(current)) return current; // another runtime or an earlier caller refreshed it
    if (current.refreshToken === undefined) {
      if (current.accessToken !== "" && current.expiresAt > clock()) return current; // inside the leeway, but still good
      const error = reauth(connection, "its access token has expired and it has no refresh token");
      log({ type: "connector.reauth_required", provider: connection.provider, connectionId: connection.id, toolId, code: error.code, message: error.message });
      throw error;
    }
    log({ type: "connector.refresh_started", provider: connection.provider, connectionId: connection.id, toolId });
    const deadline = AbortSignal.timeout(refreshTimeoutMs);
    let answer: RefreshedTokens;
    try {
      answer = await untilAborted(
        Promise.resolve().then(() =>
          adapter.refresh({ connectionId: connection.id, refreshToken: current.refreshToken!, scopes: [...current.scopes], signal: deadline }),
        ),
        deadline,
        () =>
          new ToolError("provider_unavailable", `${connection.provider} did not refresh connection ${connection.id} within ${refreshTimeoutMs} ms`, {
            retryable: true,
          }),
      );
    } catch (cause) {
      const error = refreshFailure(connection, cause);
      log({
        type: error.code === "connector_reauth_required" ? "connector.reauth_required" : "connector.refresh_failed",
        provider: connection.provider,
        connectionId: connection.id,
        toolId,
        code: error.code,
        message: error.message,
      });
      throw error;
    }
    if (!answer || typeof answer.accessToken !== "string" || answer.accessToken === "") {
      throw new ToolError(
        "provider_unavailable",
        `the ${connection.provider} token endpoint answered the refresh of connection ${connection.id} without an access token`,
        {
          retryable: true,
        },
      );
    }
    const now = clock();
    const lifetimeMs =
      typeof answer.expiresInSeconds === "number" && Number.isFinite(answer.expiresInSeconds) && answer.expiresInSeconds > 0
        ? Math.floor(answer.expiresInSeconds * 1000)
        : undefined;
    const next: TokenSet = {
      accessToken: answer.accessToken,
      ...(answer.refreshToken ? { refreshToken: answer.refreshToken } : current.refreshToken === undefined ? {} : { refreshToken: current.refreshToken }),
      expiresAt:
        lifetimeMs !== undefined
          ? now + lifetimeMs
          : typeof answer.expiresAt === "number" && answer.expiresAt > 0
            ? Math.floor(answer.expiresAt)
            : now + DEFAULT_TOKEN_LIFETIME_MS,
      scopes: answer.scopes && answer.scopes.length > 0 ? [...answer.scopes] : [...current.scopes],
      tokenType: answer.tokenType || current.tokenType,
    };
    rememberTokens(undefined, connection.id, next);
    // Persisted before anyone uses it: a crash after this line loses nothing.
    await vault.writeTokens(connection.id, next);
    log({ type: "connector.refreshed", provider: connection.provider, connectionId: connection.id, toolId });
    return next;
  };

  const refreshFailure = (connection: ConnectionInfo, cause: unknown): ToolError => {
    const safeCause = new Error(scrubber.redactText(cause instanceof Error ? `${cause.name}: ${cause.message}` : "refresh failed"));
    if (cause instanceof TokenRefreshError) {
      const status = cause.status === undefined ? "" : ` (HTTP ${cause.status}${cause.oauthError ? `, ${cause.oauthError}` : ""})`;
      switch (cause.reason) {
        case "invalid_grant":
          return reauth(connection, `the provider refused its grant${status}; it was revoked or has expired`, safeCause);
        case "invalid_client":
          return new ToolError(
            "provider_rejected",
            `${connection.provider} refused the client credentials while refreshing connection ${connection.id}${status}`,
            { cause: safeCause },
          );
        case "rejected":
          return new ToolError("provider_rejected", `${connection.provider} refused to refresh connection ${connection.id}${status}`, { cause: safeCause });
        case "unavailable":
          return new ToolError("provider_unavailable", `${connection.provider} did not refresh connection ${connection.id}${status}`, {
            cause: safeCause,
            retryable: true,
          });
      }
    }
    if (ToolError.is(cause)) {
      return new ToolError(cause.code, scrubber.redactText(cause.message), {
        cause: safeCause,
        retryable: cause.retryable,
        ...(cause.details === undefined ? {} : { details: scrubber.redact(cause.details) }),
      });
    }
    return new ToolError("provider_unavailable", `${connection.provider} did not refresh connection ${connection.id}`, { cause: safeCause, retryable: true });
  };

  /** Steps 1–3 of open: provider, connection, scopes — from metadata only, no token read. */
  const choose = async (request: ConnectorOpenRequest): Promise<{ adapter: ConnectorProvider; connection: ConnectionInfo }> => {
    if (!request || typeof request.registerSecret !== "function" || !Array.isArray(request.scopes)) {
      throw new ToolError("config_invalid", "connector open request is malformed");
    }
    throwIfAborted(request.signal, request.toolId);
    const adapter = providers.get(request.provider);
    if (!adapter) throw new ToolError("connector_unavailable", `no connector provider named ${request.provider} is configured`);
    rememberSecrets(request, adapter.secrets ?? []);
    const connection = chooseConnection(await vault.list(), request);
    const missing = request.scopes.filter((scope) => !connection.scopes.includes(scope));
    if (missing.length > 0) {
      const error = scopeMissing(connection, missing, request.toolId);
      log({
        type: "connector.scope_missing",
        provider: connection.provider,
        connectionId: connection.id,
        toolId: request.toolId,
        code: error.code,
        message: error.message,
      });
      throw error;
    }
    return { adapter, connection };
  };

  return {
    async check(request: ConnectorOpenRequest): Promise<void> {
      await choose(request);
    },

    async open(request: ConnectorOpenRequest): Promise<ConnectorHandle> {
      const { adapter, connection } = await choose(request);

      let tokens = await vault.readTokens(connection.id);
      if (tokens === undefined) throw new ToolError("connector_unavailable", `connection ${connection.id} was removed from the vault`);
      rememberTokens(request, connection.id, tokens);
      if (!isFresh(tokens)) tokens = await refresh(adapter, connection, request);
      const narrowed = request.scopes.filter((scope) => !tokens!.scopes.includes(scope));
      if (narrowed.length > 0) throw scopeMissing(connection, narrowed, request.toolId);
      throwIfAborted(request.signal, request.toolId);

      const grant: AccessGrant = Object.freeze({
        connectionId: connection.id,
        provider: connection.provider,
        accessToken: tokens.accessToken,
        tokenType: tokens.tokenType,
        scopes: Object.freeze([...tokens.scopes]),
        expiresAt: tokens.expiresAt,
      });
      log({ type: "connector.opened", provider: connection.provider, connectionId: connection.id, toolId: request.toolId });
      let client: Promise<unknown> | undefined;
      const handle: ConnectorHandle = {
        provider: connection.provider,
        connectionId: connection.id,
        scopes: Object.freeze([...request.scopes]),
        client<TClient>(): Promise<TClient> {
          client ??= Promise.resolve()
            .then(() => adapter.createClient(grant))
            .catch((cause: unknown) => {
              throw new ToolError("connector_unavailable", `could not build the ${connection.provider} client for connection ${connection.id}`, {
                cause: new Error(scrubber.redactText(cause instanceof Error ? cause.message : "client failed")),
              });
            });
          return client as Promise<TClient>;
        },
      };
      return Object.freeze(handle);
    },
  };
}

/**
 * The connection serving a call: every binding field set on a connection must equal the call's;
 * the most specific match wins, then the provider's default; a tie is refused, not guessed.
 */
export function chooseConnection(
  connections: readonly ConnectionInfo[],
  request: { readonly provider: string; readonly tenant: string; readonly principal: string },
): ConnectionInfo {
  const specificity = (c: ConnectionInfo): number => (c.principal !== undefined ? 2 : 0) + (c.tenant !== undefined ? 1 : 0);
  const candidates = connections
    .filter((c) => c.provider === request.provider)
    .filter((c) => (c.tenant === undefined || c.tenant === request.tenant) && (c.principal === undefined || c.principal === request.principal))
    .sort((a, b) => specificity(b) - specificity(a) || Number(b.isDefault) - Number(a.isDefault) || a.id.localeCompare(b.id));
  const [best, second] = candidates;
  if (!best) {
    throw new ToolError("connector_unavailable", `no ${request.provider} connection serves principal ${request.principal} in tenant ${request.tenant}`, {
      details: { provider: request.provider },
    });
  }
  if (second && specificity(second) === specificity(best) && second.isDefault === best.isDefault) {
    throw new ToolError(
      "connector_unavailable",
      `connections ${best.id} and ${second.id} both serve principal ${request.principal} in tenant ${request.tenant} for ${request.provider}; bind one more narrowly or make one the default`,
      {
        details: { provider: request.provider, connections: [best.id, second.id] },
      },
    );
  }
  return best;
}

function scopeMissing(connection: ConnectionInfo, missing: readonly string[], toolId: string): ToolError {
  return new ToolError("scope_missing", `connection ${connection.id} (${connection.provider}) was not granted ${missing.join(", ")}, which ${toolId} needs`, {
    details: { connectionId: connection.id, provider: connection.provider, missing: [...missing] },
  });
}

function reauth(connection: ConnectionInfo, why: string, cause?: unknown): ToolError {
  return new ToolError("connector_reauth_required", `connection ${connection.id} (${connection.provider}) must be authorized again: ${why}`, {
    details: { connectionId: connection.id, provider: connection.provider },
    ...(cause === undefined ? {} : { cause }),
  });
}

function cancelled(toolId: string): ToolError {
  return new ToolError("cancelled", `opening the connector for ${toolId} was cancelled`);
}

function throwIfAborted(signal: AbortSignal | undefined, toolId: string): void {
  if (signal?.aborted) throw cancelled(toolId);
}

/** Wait for `work`, or stop waiting (without stopping it) when `signal` aborts. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, onAbort: () => ToolError): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => reject(onAbort());
    signal.addEventListener("abort", abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(error);
      },
    );
  });
}
