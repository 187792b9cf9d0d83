/** Deadlines for work outside the body (previews, connection checks), and the connector as the gate opens it. */
import type { ConnectorHandle, ConnectorOpenRequest } from "../context.js";
import { ToolError } from "../errors.js";
import type { Resolved } from "./call-state.js";
import type { GateEnv } from "./env.js";
import { HandlerRun } from "./run-handler.js";

/** Run `work` under the tool's deadline and the caller's signal; throw `timeout`/`cancelled` past them. */
export async function bounded<T>(c: Resolved, what: string, work: (signal: AbortSignal) => T | Promise<T>): Promise<T> {
  const { manifest } = c;
  const run = new HandlerRun(manifest.timeoutMs, c.call.signal);
  const started = run.start(() => work(run.signal));
  const outcome = started instanceof Promise ? await started : started;
  if (outcome.kind === "returned") return outcome.value as T;
  if (outcome.kind === "threw") throw outcome.error;
  outcome.late.catch(() => undefined);
  throw outcome.why === "timeout"
    ? new ToolError("timeout", `${what} for ${manifest.id} did not finish within ${manifest.timeoutMs} ms`)
    : new ToolError("cancelled", `${what} for ${manifest.id} was cancelled`);
}

export function connectorRequest(env: GateEnv, c: Resolved, signal: AbortSignal): ConnectorOpenRequest {
  const requirement = c.manifest.connector!;
  return {
    provider: requirement.provider,
    scopes: requirement.scopes,
    principal: c.call.principal,
    tenant: c.call.tenant,
    toolId: c.manifest.id,
    signal,
    registerSecret: (value) => env.holdForCall(c.invocationId, value),
  };
}

export function openConnector(env: GateEnv, c: Resolved, signal: AbortSignal): Promise<ConnectorHandle> {
  if (!env.connectors) throw new ToolError("config_invalid", `tool ${c.manifest.id} needs connectors, but the gate has none`);
  return env.connectors.open(connectorRequest(env, c, signal));
}

/**
 * A preview may read through the connector, but most never do: open it (and read a token) only
 * when the preview first asks for the client.
 */
export function lazyConnector(env: GateEnv, c: Resolved, signal: AbortSignal): ConnectorHandle {
  const requirement = c.manifest.connector!;
  let opened: Promise<ConnectorHandle> | undefined;
  let connectionId = "";
  const open = (): Promise<ConnectorHandle> =>
    (opened ??= openConnector(env, c, signal).then((handle) => {
      connectionId = handle.connectionId;
      return handle;
    }));
  return {
    provider: requirement.provider,
    scopes: requirement.scopes,
    get connectionId() {
      return connectionId;
    },
    client: async <T>() => (await open()).client<T>(),
  };
}
