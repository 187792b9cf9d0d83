import { hashCanonical, ToolError, type ToolContext, type ToolFamily } from "@toolgate/core";
import { sandboxLimits, type SandboxFacts } from "@toolgate/core/boundary";
import type { ToolEventBody, ToolRegister } from "../protocol/messages.js";
import { buildFamily, warmRegistration } from "./manifests.js";
import type { ProcessLogEvent, StartToolProcessOptions, ToolProcessHandle, ToolProcessState, ToolProcessStatus } from "./options.js";
import { ProcessSession, type CallOutcome, type SessionSpec } from "./session.js";
import { childEnv, DEFAULT_PASS_ENV, resolveSandbox, spawnPlan, type SandboxRequest, type SpawnPlan } from "./spawn.js";
import { notificationSink } from "./notification-audit.js";
import { childSecrets, stderrSummary } from "./stderr-tail.js";
import { plainLine } from "./untrusted-text.js";

/** The code of the process warning emitted when `sandbox: "auto"` finds no bubblewrap and there is no `onLog`. */
export const UNSANDBOXED_WARNING = "TOOLGATE_PROCESS_UNSANDBOXED";

const NAME_PATTERN = /^[a-z][a-z0-9_]*$/;
const MAX_BACKOFF_MS = 30_000;
const MAX_PROGRESS_CHARS = 4096;
const MAX_CHUNK_CHARS = 64 * 1024;

function positive(value: number | undefined, fallback: number, field: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new ToolError("config_invalid", `${field} must be a non-negative number of milliseconds`);
  return value;
}

/** A tool's event as a progress event. Its text is the tool's: plain and bounded, withheld whole when too long (never cut before the gate redacts it). */
function progressOf(event: ToolEventBody): { message: string; data: Record<string, unknown> } {
  switch (event.kind) {
    case "Status":
      return { message: plainLine(event.status, MAX_PROGRESS_CHARS, "status"), data: { kind: "Status" } };
    case "OutputChunk":
      return {
        message: "output",
        data: { kind: "OutputChunk", chunk: event.chunk.length <= MAX_CHUNK_CHARS ? event.chunk : `[output chunk withheld: ${event.chunk.length} characters]` },
      };
    case "Log":
      return { message: plainLine(event.message, MAX_PROGRESS_CHARS, "log message"), data: { kind: "Log", level: plainLine(event.level, 32, "level") } };
  }
}

/** A start-up that failed before the process registered, with the end of its stderr (redacted, whole lines): what an author needs to see. */
function handshakeFailure(error: unknown, session: ProcessSession, redact: (text: string) => string): unknown {
  if (!ToolError.is(error) || !error.message.endsWith("during the handshake")) return error;
  const tail = stderrSummary(session.stderrTail(), redact, session.stderrTruncated);
  return new ToolError(error.code, `${error.message}${tail === "" ? "; its stderr was empty" : `; its stderr ends: ${tail}`}`, {
    cause: error,
    ...(error.details ? { details: error.details } : {}),
  });
}

/** A list option: absent, or an array of strings. */
function paths(value: readonly string[] | undefined, field: string): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((p) => typeof p !== "string")) throw new ToolError("config_invalid", `${field} must be an array of paths`);
  return value;
}

/**
 * Start a tool process and hand back its family. Spawns the command (inside bubblewrap unless
 * `sandbox` says otherwise or `bwrap` is missing — then with a warning)
 * with an allowlisted environment, sends `ToolHello`, waits for one `ToolRegister` within
 * `handshakeTimeoutMs`, checks declared scopes against `scopeOverrides` and `expectedScopes`, and
 * builds one manifest per admitted tool (`<name>.<tool_name>`, output untrusted, input validated
 * against the declared JSON Schema by the gate before any frame is sent).
 *
 * Rejects with `config_invalid` for a bad option, a missing sandbox wrapper, a widening scope
 * override or a scope above its ceiling; with `tool_process_dead` or `protocol_error` when the
 * process exits, stalls or misbehaves during the handshake. It never leaves a child running when
 * it rejects.
 *
 * @example
 * const stats = await startToolProcess({
 *   name: "textstats", command: "python3", args: ["examples/python-tool/textstats_tool.py"],
 *   expectedScopes: { word_count: "text:read" },
 *   tools: { word_count: { effect: "read", risk: "low" } },
 * });
 * const registry = createToolRegistry({ families: [stats.family] });
 * // profile needs "textstats:text:read"
 * await stats.stop();
 */
export async function startToolProcess(options: StartToolProcessOptions): Promise<ToolProcessHandle> {
  if (!options || typeof options.name !== "string" || !NAME_PATTERN.test(options.name)) {
    throw new ToolError("config_invalid", `startToolProcess needs a name that is a lower-case word (${NAME_PATTERN}); got ${JSON.stringify(options?.name)}`);
  }
  if (typeof options.command !== "string" || options.command === "") throw new ToolError("config_invalid", "startToolProcess needs a command");
  const name = options.name;
  const handshakeTimeoutMs = positive(options.handshakeTimeoutMs, 10_000, "handshakeTimeoutMs");
  const cancelGraceMs = positive(options.cancelGraceMs, 2_000, "cancelGraceMs");
  const shutdownGraceMs = positive(options.shutdownGraceMs, 2_000, "shutdownGraceMs");
  const maxRestarts = Math.floor(positive(options.restart?.maxRestarts, 3, "restart.maxRestarts"));
  const backoffMs = positive(options.restart?.backoffMs, 250, "restart.backoffMs");
  const log = (event: Omit<ProcessLogEvent, "process">): void => {
    const full = { ...event, process: name };
    if (options.onLog) options.onLog(full);
    else if (event.level === "warn" || event.level === "error") console.warn(`[toolgate process ${name}] ${event.message}`);
  };
  const who = `tool process ${name}`;
  const sandbox = resolveSandbox(options.sandbox, process.env["PATH"], who);
  if (options.network !== undefined && typeof options.network !== "boolean") throw new ToolError("config_invalid", "network must be true or false");
  const limits = sandboxLimits(options.limits, `${who}: limits`);
  const env = childEnv(options.passEnv ?? DEFAULT_PASS_ENV, options.env ?? {});
  const request: SandboxRequest = {
    who,
    command: options.command,
    args: options.args ?? [],
    cwd: options.cwd,
    searchPath: env["PATH"],
    readOnlyPaths: paths(options.readOnlyPaths, "readOnlyPaths"),
    writablePaths: paths(options.writablePaths, "writablePaths"),
    unixSockets: paths(options.unixSockets, "unixSockets"),
    network: options.network ?? false,
    limits,
    env,
  };
  const redactStderr = childSecrets(options.env, options.redactor);
  // A bad path, socket or working directory is refused here, before anything is spawned.
  let plan: SpawnPlan | undefined = spawnPlan(request, sandbox);
  const spec: SessionSpec = {
    argv: plan.argv,
    env,
    cwd: options.cwd,
    handshakeTimeoutMs,
    maxStderrBytes: Math.floor(positive(options.maxStderrBytes, 64 * 1024, "maxStderrBytes")),
    log: (level, message) => log({ level, message }),
    notify: notificationSink(name, options.onNotification, options.audit, (message) => log({ level: "warn", message })),
    limits,
  };
  /** The sandbox the first process ran in: what the inventory says. */
  let facts: SandboxFacts | undefined;

  /** Spawn and handshake; on any failure the child is killed and reaped before this rejects. */
  const launch = async (): Promise<{ session: ProcessSession; registration: ToolRegister }> => {
    // The sandbox is built again at each start: state protected since the last one (a journal opened later) is hidden too.
    const current = plan ?? spawnPlan(request, sandbox);
    plan = undefined;
    facts ??= current.facts;
    const session = new ProcessSession({ ...spec, argv: current.argv, descriptors: current.descriptors, spawnEnv: current.env, finish: current.finish });
    try {
      return { session, registration: await session.start() };
    } catch (error) {
      session.killNow();
      await session.closed;
      throw handshakeFailure(error, session, redactStderr);
    }
  };

  if (sandbox.kind !== "bubblewrap") {
    // Only bubblewrap binds paths and sets the kernel's limits: said, so nobody believes they apply.
    const moot = [
      ...(["readOnlyPaths", "writablePaths", "unixSockets", "network"] as const).filter((k) => options[k] !== undefined),
      ...Object.keys(options.limits ?? {})
        .filter((k) => k !== "outputBytes")
        .map((k) => `limits.${k}`),
    ];
    if (moot.length > 0)
      log({
        level: "warn",
        message: `${moot.join(", ")} apply only under sandbox "bubblewrap"; this process runs ${sandbox.kind === "custom" ? "in a custom wrapper" : "unsandboxed"}`,
      });
  }
  const unsandboxed = sandbox.warning;
  if (unsandboxed !== undefined) {
    // Said once, at start-up, where an operator looks: the log hook, or a process warning with a code.
    if (options.onLog) log({ level: "warn", message: unsandboxed });
    else process.emitWarning(`tool process ${name}: ${unsandboxed}`, { code: UNSANDBOXED_WARNING });
  }
  const launching = launch();
  // While the child boots (it has a core of its own), the host warms what its registration will run.
  warmRegistration();
  const first = await launching;
  let session = first.session;
  const fingerprint = hashCanonical(first.registration);
  let family: ToolFamily;
  try {
    family = buildFamily(options, sandbox, facts, first.registration, (...args) => invoke(...args));
  } catch (error) {
    await session.stop(shutdownGraceMs);
    throw error;
  }

  let state: ToolProcessState = "ready";
  let restarts = 0;
  let lastError: ToolError | undefined;
  let nextCallId = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  /** Resolves when a restart succeeds or gives up; calls that arrive while restarting wait on it. */
  let recovered: Promise<void> = Promise.resolve();
  let wakeWaiters: (() => void) | undefined;

  const restartLater = (error: ToolError): void => {
    lastError = error;
    if (state === "stopped" || state === "dead") return;
    if (restarts >= maxRestarts) {
      state = "dead";
      log({ level: "error", message: `tool process gave up after ${restarts} restart(s): ${error.message}` });
      wakeWaiters?.();
      return;
    }
    if (state !== "restarting") {
      state = "restarting";
      recovered = new Promise<void>((resolve) => (wakeWaiters = resolve));
    }
    restarts += 1;
    const delay = Math.min(backoffMs * 2 ** (restarts - 1), MAX_BACKOFF_MS);
    log({ level: "warn", message: `tool process ended (${error.message}); restart ${restarts} of ${maxRestarts} in ${delay} ms` });
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      void (async () => {
        await session.closed;
        if (state !== "restarting") return;
        let next: { session: ProcessSession; registration: ToolRegister };
        try {
          next = await launch();
        } catch (cause) {
          return restartLater(ToolError.is(cause) ? cause : new ToolError("tool_process_dead", String(cause), { cause }));
        }
        if (state !== "restarting") {
          await next.session.stop(shutdownGraceMs);
          return;
        }
        if (hashCanonical(next.registration) !== fingerprint) {
          await next.session.stop(shutdownGraceMs);
          state = "dead";
          lastError = new ToolError("protocol_error", "tool process registered a different set of tools after a restart; its family no longer describes it");
          log({ level: "error", message: lastError.message });
          wakeWaiters?.();
          return;
        }
        adopt(next.session);
        state = "ready";
        log({ level: "info", message: `tool process restarted (pid ${next.session.pid})` });
        wakeWaiters?.();
      })();
    }, delay);
  };

  const adopt = (next: ProcessSession): void => {
    session = next;
    next.onDeath((error) => {
      if (session === next) restartLater(error);
    });
  };
  adopt(session);

  const notRunning = (): ToolError =>
    new ToolError(
      "tool_process_dead",
      state === "stopped" ? `tool process ${name} was stopped` : `tool process ${name} is not running${lastError ? ` (${lastError.message})` : ""}`,
      { boundary: "effect_not_started", ...(lastError ? { cause: lastError } : {}) },
    );

  const invoke = async (toolName: string, input: unknown, ctx: ToolContext, escalationApproved: boolean): Promise<CallOutcome> => {
    // One subscription for the call's life (no AbortController per call): the caller's cancel or
    // the deadline is remembered, and reaches whatever the call is waiting on at that moment.
    let aborted = false;
    let onAbort: (() => void) | undefined;
    const unsubscribe = ctx.onAbort(() => {
      aborted = true;
      onAbort?.();
    });
    try {
      while (state === "restarting") {
        if (aborted) throw new ToolError("cancelled", `${name}.${toolName} was cancelled while its process restarted`, { boundary: "effect_not_started" });
        await Promise.race([recovered, new Promise<void>((resolve) => (onAbort = resolve))]);
        onAbort = undefined;
      }
      if (state !== "ready" || !session.alive) throw notRunning();
      if (aborted) throw new ToolError("cancelled", `${name}.${toolName} was cancelled before it was sent`, { boundary: "effect_not_started" });
      const current = session;
      const callId = `c${(nextCallId++).toString(36)}`;
      onAbort = () => current.cancel(callId, cancelGraceMs);
      try {
        return await current.call(callId, toolName, input, ctx.effect.invocationId, escalationApproved, (event) => ctx.progress(progressOf(event)));
      } catch (error) {
        if (error instanceof ToolError) {
          throw new ToolError(error.code, `${name}.${toolName}: ${error.message}`, { cause: error, ...(error.details ? { details: error.details } : {}) });
        }
        throw error;
      }
    } finally {
      unsubscribe();
    }
  };

  const toolIds = family.tools.map((t) => t.id);

  let stopping: Promise<void> | undefined;
  const handle: ToolProcessHandle = {
    name,
    family,
    declared: first.registration.tools,
    toolIds,
    status(): ToolProcessStatus {
      return {
        name,
        state,
        pid: state === "ready" ? session.pid : undefined,
        restarts,
        pendingCalls: session.pendingCalls,
        lastError: lastError?.message,
      };
    },
    stderrTail: () => session.stderrTail(),
    stop(): Promise<void> {
      stopping ??= (async () => {
        state = "stopped";
        if (restartTimer) clearTimeout(restartTimer);
        wakeWaiters?.();
        await session.stop(shutdownGraceMs);
      })();
      return stopping;
    },
  };
  return Object.freeze(handle);
}
