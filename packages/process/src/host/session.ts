import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { ToolError } from "@toolgate/core";
import type { SandboxLimits } from "@toolgate/core/boundary";
import { FrameDecoder, FrameWriter } from "../protocol/codec.js";
import {
  classifyToolMessage,
  PROTOCOL_VERSION,
  toolEventBodySchema,
  type HostMessage,
  type ToolEventBody,
  type ToolRegister,
  type VerificationState,
} from "../protocol/messages.js";
import { EndedCalls, NotificationGate, type ProcessNotification } from "./after-calls.js";
import { abandonedAtExit, limitFailure, type RunEnd } from "./run-end.js";
import { closePipes, closePipesAfterExit } from "./spawn.js";
import { StderrTail } from "./stderr-tail.js";
import { plainLine } from "./untrusted-text.js";

/** Tool text quoted in the host's own messages: plain, and withheld whole when long (see untrusted-text.ts). */
const told = (text: string): string => plainLine(text, 1000, "the tool's text");

/** How one call ended, as the tool said it. Process failures reject instead. */
export type CallOutcome =
  | { readonly kind: "result"; readonly verified: VerificationState; readonly output: unknown }
  | { readonly kind: "error"; readonly code: string; readonly message: string }
  | { readonly kind: "escalation"; readonly reason: string };

export interface SessionSpec {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string | undefined;
  readonly handshakeTimeoutMs: number;
  readonly maxStderrBytes: number;
  readonly log: (level: "debug" | "warn", message: string) => void;
  /** Where `DispatchNotification` frames go, once within their size and rate bounds. */
  readonly notify?: ((notification: Omit<ProcessNotification, "process">) => void) | undefined;
  /** What the sandbox reads on descriptors 3, 4, … before the tool starts (its seccomp program, the tool's environment). */
  readonly descriptors?: readonly Buffer[] | undefined;
  /** The environment to spawn with under a sandbox (the tool's own goes to it on a descriptor). */
  readonly spawnEnv?: Readonly<Record<string, string>> | undefined;
  /** The process's limits: `outputBytes` bounds each frame read; the others name what `finish` reports. */
  readonly limits: SandboxLimits;
  /** The sandbox's end of a run: which limits the process hit, read once it exited. */
  readonly finish?: RunEnd | undefined;
}

interface PendingCall {
  readonly onEvent: (event: ToolEventBody) => void;
  readonly resolve: (outcome: CallOutcome) => void;
  readonly reject: (error: ToolError) => void;
  cancelTimer?: NodeJS.Timeout;
}

/** Every live child, so a host that exits takes its tool processes (and their sandboxes' runs) with it. */
const live = abandonedAtExit<ProcessSession>();

/**
 * One lifetime of one tool process: spawn, handshake, calls matched by `call_id`, death. Anything
 * the process sends that breaks the protocol kills it; its pending calls fail with
 * `protocol_error`, or `tool_process_dead` when it simply went away.
 */
export class ProcessSession {
  readonly child: ChildProcessWithoutNullStreams;
  /** Settles once the process has exited and its pipes are closed (and it has been reaped). */
  readonly closed: Promise<void>;
  private readonly decoder: FrameDecoder;
  /** Frames sent in one tick leave in one write. */
  private readonly writer = new FrameWriter((bytes) => {
    if (!this.isClosed && !this.child.stdin.destroyed && !this.child.stdin.writableEnded) this.child.stdin.write(bytes);
  });
  private readonly pending = new Map<string, PendingCall>();
  /** Calls that ended: a frame for one is late (a cancel crossed its result), not a violation. */
  private readonly ended = new EndedCalls();
  private readonly notifications: NotificationGate;
  private readonly stderr: StderrTail;
  private registration: ToolRegister | undefined;
  private handshake: { resolve: (r: ToolRegister) => void; reject: (e: ToolError) => void } | undefined;
  private failure: ToolError | undefined;
  private exitDescription = "exited";
  private isClosed = false;
  private runFinished = false;
  private deathListener: ((error: ToolError) => void) | undefined;

  constructor(private readonly spec: SessionSpec) {
    this.notifications = new NotificationGate(spec.notify, spec.log);
    this.decoder = new FrameDecoder({ maxFrameBytes: spec.limits.outputBytes });
    this.stderr = new StderrTail(spec.maxStderrBytes);
    const [program, ...args] = spec.argv;
    this.child = spawn(program!, args, {
      cwd: spec.cwd,
      env: { ...(spec.spawnEnv ?? spec.env) },
      stdio: ["pipe", "pipe", "pipe", ...(spec.descriptors ?? []).map(() => "pipe" as const)],
      // Its own process group, so the whole tree (a sandbox and what runs inside) is killed together.
      detached: true,
      windowsHide: true,
    });
    live.add(this);
    let spawnError: Error | undefined;
    this.child.on("error", (error) => {
      spawnError ??= error;
      this.fail(new ToolError("tool_process_dead", `tool process could not be started or signalled: ${error.message}`, { cause: error }));
    });
    this.child.stdin.on("error", () => undefined); // EPIPE when it died; its exit says why
    (spec.descriptors ?? []).forEach((content, i) => {
      const pipe = this.child.stdio[3 + i] as import("node:stream").Writable | null;
      pipe?.on("error", () => undefined); // EPIPE when it died first; its exit says why
      pipe?.end(content);
    });
    closePipesAfterExit(this.child);
    this.child.stdout.on("data", (chunk: Buffer) => this.onStdout(chunk));
    this.child.stderr.on("data", (chunk: Buffer) => this.stderr.push(chunk));
    this.child.on("exit", (code, signal) => {
      this.exitDescription = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      this.finishRun(code, signal);
    });
    this.closed = new Promise<void>((resolve) => {
      this.child.on("close", (code, signal) => {
        if (code !== null || signal !== null) this.exitDescription = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        if (!this.failure) {
          try {
            this.decoder.end();
          } catch (error) {
            this.fail(new ToolError("protocol_error", `tool process output ended mid-frame: ${(error as Error).message}`, { cause: error }));
          }
        }
        this.finishRun(code, signal);
        this.isClosed = true;
        live.delete(this);
        // The leader is gone; anything it left in its group (a sandbox's child, a grandchild) goes too.
        // Safe: a pid is not reused while its process group still has members.
        if (this.child.pid !== undefined) {
          try {
            process.kill(-this.child.pid, "SIGKILL");
          } catch {
            // the group is already empty
          }
        }
        this.fail(new ToolError("tool_process_dead", `tool process ${this.exitDescription}${spawnError ? ` (${spawnError.message})` : ""}`));
        resolve();
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return !this.isClosed && this.failure === undefined;
  }

  get pendingCalls(): number {
    return this.pending.size;
  }

  /** The first reason this session stopped being usable. */
  get error(): ToolError | undefined {
    return this.failure;
  }

  /** Called once, with the error, when the session becomes unusable. */
  onDeath(listener: (error: ToolError) => void): void {
    this.deathListener = listener;
    if (this.failure) listener(this.failure);
  }

  /** The last bytes the process wrote to stderr (bounded; older output is dropped). */
  stderrTail(): string {
    return this.stderr.text();
  }

  /** True when older stderr was dropped, so the tail starts mid-output. */
  get stderrTruncated(): boolean {
    return this.stderr.truncated;
  }

  /** Send `ToolHello` and wait for exactly one `ToolRegister`, within the handshake timeout. */
  start(): Promise<ToolRegister> {
    return new Promise<ToolRegister>((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      const timer = setTimeout(() => {
        this.fail(new ToolError("tool_process_dead", `tool process sent no ToolRegister within ${this.spec.handshakeTimeoutMs} ms`));
      }, this.spec.handshakeTimeoutMs);
      this.handshake = {
        resolve: (registration) => {
          clearTimeout(timer);
          resolve(registration);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.send({ type: "ToolHello", protocol_version: PROTOCOL_VERSION });
    });
  }

  /** Start one call. Resolves with the tool's terminal frame; rejects when the process dies or breaks the protocol. */
  call(
    callId: string,
    toolName: string,
    input: unknown,
    turnId: string,
    escalationApproved: boolean,
    onEvent: (event: ToolEventBody) => void,
  ): Promise<CallOutcome> {
    return new Promise<CallOutcome>((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      this.pending.set(callId, { onEvent, resolve, reject });
      this.send({
        type: "InvokeTool",
        call_id: callId,
        tool_name: toolName,
        input,
        turn_id: turnId,
        ...(escalationApproved ? { escalation_approved: true } : {}),
      });
    });
  }

  /**
   * Send `CancelInvocation`. If no terminal frame for the call arrives within `graceMs`, the process
   * is killed (its other calls fail with `tool_process_dead`).
   */
  cancel(callId: string, graceMs: number): void {
    const call = this.pending.get(callId);
    if (!call || call.cancelTimer) return;
    this.send({ type: "CancelInvocation", call_id: callId });
    call.cancelTimer = setTimeout(() => {
      if (this.pending.get(callId) === call) {
        this.fail(new ToolError("tool_process_dead", `tool process did not stop call ${callId} within ${graceMs} ms of CancelInvocation, so it was killed`));
      }
    }, graceMs);
    call.cancelTimer.unref();
  }

  /** `ToolShutdown`, stdin closed, then SIGKILL to the process group after `graceMs`. Resolves once reaped. */
  async stop(graceMs: number): Promise<void> {
    if (this.isClosed) return;
    if (!this.failure) this.failure = new ToolError("tool_process_dead", "tool process was stopped");
    this.failPending(this.failure);
    this.send({ type: "ToolShutdown" }, true);
    this.writer.flush();
    this.child.stdin.end();
    const timer = setTimeout(() => this.killNow(), graceMs);
    // Once it has exited, nothing it wrote is awaited: its pipes close at once, so a process it left
    // holding them (a daemon of its own session) cannot hold stop() past the grace period.
    if (this.child.exitCode !== null || this.child.signalCode !== null) closePipes(this.child);
    else this.child.once("exit", () => closePipes(this.child));
    await this.closed;
    clearTimeout(timer);
  }

  /**
   * The run is over: the sandbox says which limits the process hit (and kills what is left of it).
   * A process that died on a limit fails with `limit_exceeded`, its pending calls as after a crash.
   */
  private finishRun(code: number | null, signal: NodeJS.Signals | null): void {
    const finish = this.spec.finish;
    if (finish === undefined || this.runFinished) return;
    this.runFinished = true;
    const error = limitFailure(finish, { code, signal }, this.spec.limits, this.exitDescription, (message) => this.spec.log("warn", message));
    if (error !== undefined) this.fail(error);
  }

  /** The host is exiting: kill the process now and end its sandbox's run (its cgroup), without waiting. */
  abandon(): void {
    this.killNow();
    this.finishRun(null, "SIGKILL");
  }

  /** SIGKILL the process group (and the child itself, if the group is gone). */
  killNow(): void {
    if (this.isClosed) return;
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      try {
        this.child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  }

  private send(message: HostMessage, quiet = false): void {
    if (this.isClosed || this.child.stdin.destroyed || this.child.stdin.writableEnded) return;
    try {
      this.writer.send(message);
    } catch (error) {
      if (!quiet) this.fail(new ToolError("protocol_error", `could not encode ${message.type}: ${(error as Error).message}`, { cause: error }));
    }
  }

  /**
   * Never throws: this runs in the stdout handler, where a throw would take the host down. The
   * frames before a framing failure are read first (a result that arrived whole still counts),
   * then the failure ends the session.
   */
  private onStdout(chunk: Buffer): void {
    if (this.failure) return;
    const { frames, error } = this.decoder.feed(chunk);
    for (const frame of frames) {
      if (this.failure) return;
      try {
        this.onFrame(frame);
      } catch (cause) {
        return this.fail(new ToolError("protocol_error", `the host could not read a frame from the tool process: ${String(cause).slice(0, 200)}`, { cause }));
      }
    }
    // A framing error can quote the tool's bytes (JSON.parse names the text it stopped at): made plain like all its text.
    if (error) {
      // An oversized header is all the host reads of such a frame (garbage reads the same way): the limit is named, the code stays the protocol's.
      const details = error.problem === "oversized" ? { details: { limit: "outputBytes", value: this.spec.limits.outputBytes } } : {};
      this.fail(new ToolError("protocol_error", `tool process broke the framing: ${told(error.message)}`, { cause: error, ...details }));
    }
  }

  private onFrame(frame: unknown): void {
    const read = classifyToolMessage(frame);
    if (read.kind === "unknown") return this.spec.log("debug", `skipped a frame of unknown type ${told(JSON.stringify(read.type))}`);
    if (read.kind === "malformed") return this.fail(new ToolError("protocol_error", `tool process sent a bad frame: ${told(read.problem)}`));
    const message = read.message;
    if (message.type === "ToolRegister") {
      if (this.registration) return this.fail(new ToolError("protocol_error", "tool process sent a second ToolRegister"));
      this.registration = message;
      this.handshake?.resolve(message);
      this.handshake = undefined;
      return;
    }
    if (!this.registration) return this.fail(new ToolError("protocol_error", `tool process sent ${message.type} before ToolRegister`));
    if (message.type === "DispatchNotification") {
      return this.notifications.receive(message, (id) => this.pending.has(id) || this.ended.has(id));
    }
    const call = this.pending.get(message.call_id);
    if (!call) {
      if (this.ended.has(message.call_id))
        return this.spec.log("debug", `dropped a late ${message.type} for call ${told(message.call_id)}, which had already ended`);
      return this.fail(
        new ToolError("protocol_error", `tool process sent ${message.type} for unknown call_id ${told(JSON.stringify(message.call_id.slice(0, 64)))}`),
      );
    }
    switch (message.type) {
      case "ToolEvent": {
        const body = toolEventBodySchema.safeParse(message.event);
        if (!body.success) return this.spec.log("debug", `skipped a ToolEvent of unknown kind for ${told(message.call_id)}`);
        try {
          call.onEvent(body.data);
        } catch {
          // a progress listener's failure is the listener's, not the tool's: the call goes on
        }
        return;
      }
      case "ToolResult":
        this.settle(message.call_id, call);
        return call.resolve({ kind: "result", verified: message.verified, output: message.output });
      case "ToolError":
        this.settle(message.call_id, call);
        return call.resolve({ kind: "error", code: message.code, message: message.message });
      case "RequiresEscalation":
        this.settle(message.call_id, call);
        return call.resolve({ kind: "escalation", reason: message.reason });
    }
  }

  private settle(callId: string, call: PendingCall): void {
    if (call.cancelTimer) clearTimeout(call.cancelTimer);
    this.pending.delete(callId);
    this.ended.add(callId);
  }

  private failPending(error: ToolError): void {
    for (const [callId, call] of this.pending) {
      this.settle(callId, call);
      call.reject(error);
    }
  }

  /** The session is unusable: fail what waits on it, kill it, tell the owner once. */
  private fail(error: ToolError): void {
    const first = this.failure === undefined;
    this.failure ??= error;
    const reason = this.failure;
    if (this.handshake) {
      // Its stderr is quoted by whoever started it, once the pipes are closed (see `handshakeFailure`).
      this.handshake.reject(
        this.registration
          ? reason
          : new ToolError(reason.code, `${reason.message} during the handshake`, { cause: reason, ...(reason.details ? { details: reason.details } : {}) }),
      );
      this.handshake = undefined;
    }
    this.failPending(reason);
    this.killNow();
    if (first) this.deathListener?.(reason);
  }
}
