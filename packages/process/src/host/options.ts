import type { ActionType, ApprovalPreview, ApprovalRule, DataClass, Effect, PreviewContext, Redactor, RiskLevel, ToolFamily, Visibility } from "@toolgate/core";
import type { DeclaredTool } from "../protocol/messages.js";
import type { ProcessNotification } from "./after-calls.js";
import type { NotificationAudit } from "./notification-audit.js";
import type { SandboxLimits } from "@toolgate/core/boundary";
import type { ScopeTokenMapping } from "./scopes.js";
import type { SandboxOption } from "./spawn.js";

/**
 * What the operator says about one process tool. A tool process declares little (name,
 * description, input schema, scope); everything that governs it comes from here, with safe
 * defaults: `effect: "write"`, `risk: "medium"`, `approval: "never"`, not idempotent, not
 * retryable, not reversible, `actionType: "process-call"`. Core's rules apply as to any manifest:
 * a `write`/`destructive` tool with risk `high` or above cannot have `approval: "never"`.
 */
export interface ProcessToolSettings {
  readonly title?: string;
  readonly actionType?: ActionType;
  readonly effect?: Effect;
  readonly risk?: RiskLevel;
  readonly visibility?: Visibility;
  /**
   * When a human must approve (a predicate gets the input and the call's identity). A tool's
   * `RequiresEscalation` asks for approval on top of this, for the same caller's same input only.
   */
  readonly approval?: ApprovalRule<unknown>;
  /** The summary a human approves; default: the tool id and the input. An escalated call always gets the host's escalation preview instead. */
  readonly preview?: (input: unknown, ctx: PreviewContext) => ApprovalPreview | Promise<ApprovalPreview>;
  readonly idempotent?: boolean;
  readonly retryable?: boolean;
  readonly reversible?: boolean;
  /** Deadline for one call; default `callTimeoutMs`. */
  readonly timeoutMs?: number;
  readonly provider?: string;
  readonly dataEgress?: boolean;
  readonly dataClass?: DataClass;
  readonly requiredConsent?: readonly string[];
  /** Short, secret-free description of what a call touches, for audit. */
  readonly target?: (input: unknown) => string;
}

/** Restarts after the process dies: at most `maxRestarts` over the handle's life, waiting `backoffMs × 2^(n-1)` (capped at 30 s). */
export interface RestartPolicy {
  /** Default 3. 0 disables restarts. */
  readonly maxRestarts?: number;
  /** Default 250 ms. */
  readonly backoffMs?: number;
}

/** Something the host wants an operator to know (unchecked scopes, skipped tools, restarts). */
export interface ProcessLogEvent {
  readonly level: "debug" | "info" | "warn" | "error";
  readonly process: string;
  readonly message: string;
  readonly tool?: string;
}

export interface StartToolProcessOptions {
  /** Family name and id prefix: `<name>.<tool_name>`. A lower-case word (`^[a-z][a-z0-9_]*$`). */
  readonly name: string;
  /** The program to run; found on the host's PATH unless it contains a `/`. */
  readonly command: string;
  readonly args?: readonly string[];
  /** Variables set explicitly for the child. Nothing else from the host's environment is passed but `passEnv`. */
  readonly env?: Readonly<Record<string, string>>;
  /** Host variables passed through by name; default `PATH`, `LANG`, `LC_ALL`, `LC_CTYPE`, `TZ`. */
  readonly passEnv?: readonly string[];
  readonly cwd?: string;
  /**
   * A wrapper the spawn goes through. Default `"auto"`: bubblewrap where `bwrap` is on PATH; where it
   * is not, no sandbox, a start-up warning (`onLog`, or a process warning with code
   * `TOOLGATE_PROCESS_UNSANDBOXED`) and an inventory that says so. `"none"`: no sandbox, explicitly.
   * An explicit wrapper that cannot be found is a start-up error naming it. Under bubblewrap the
   * tool sees, read-only, the system's programs and libraries, its own program (an interpreter
   * install's prefix), the directories of the files its arguments name, its working directory and
   * `readOnlyPaths`; writable only `writablePaths`; nothing else of the host.
   */
  readonly sandbox?: SandboxOption;
  /** Host paths (absolute, existing) the sandboxed tool may read besides its own files: its libraries, its data. */
  readonly readOnlyPaths?: readonly string[];
  /** Host paths (absolute, existing) the sandboxed tool may write. */
  readonly writablePaths?: readonly string[];
  /** Host Unix sockets the sandboxed tool may connect to; without any, it may open no Unix socket at all. */
  readonly unixSockets?: readonly string[];
  /** Share the host's network with the sandboxed tool; default false (a network namespace with only loopback). */
  readonly network?: boolean;
  /**
   * Limits for this process (the tools it serves share them), over core's defaults: memory,
   * processes, open files, CPU seconds, file size, /tmp size under bubblewrap; `outputBytes`, the
   * largest frame the host reads from the process, in every case. A process that dies on one ends
   * its pending calls with `limit_exceeded` (`details.limit`, `details.value`).
   */
  readonly limits?: Partial<SandboxLimits>;
  /** Per tool: a narrower scope than the one it declares. A wider (or unrelated) one refuses start-up. */
  readonly scopeOverrides?: Readonly<Record<string, string>>;
  /**
   * Per tool: the widest scope it may declare. Once any entry is present, this is also the
   * process's tool allowlist: tools not named here are not registered.
   */
  readonly expectedScopes?: Readonly<Record<string, string>>;
  /**
   * Tools whose own text (description, input schema) reads like instructions to the model are not
   * registered until accepted here: tool name → the `descriptionDigest` the start-up warning names.
   * A changed text has another digest and is refused again.
   */
  readonly acceptedDescriptions?: Readonly<Record<string, string>>;
  /** Scope → permission tokens. Default: `<name>:<scope>` (see `defaultScopeToken`). */
  readonly scopeTokens?: ScopeTokenMapping;
  /** Per-tool governance (effect, risk, approval, …). */
  readonly tools?: Readonly<Record<string, ProcessToolSettings>>;
  /** Default 10 s. */
  readonly handshakeTimeoutMs?: number;
  /** Default deadline for each call; default 30 s. */
  readonly callTimeoutMs?: number;
  /** How long a cancelled call may take to answer `CancelInvocation` before the process is killed; default 2 s. */
  readonly cancelGraceMs?: number;
  /** How long `stop()` waits after `ToolShutdown` before SIGKILL; default 2 s. */
  readonly shutdownGraceMs?: number;
  readonly restart?: RestartPolicy;
  /** Bytes of stderr kept (the tail); default 64 KiB. Stderr is always drained. */
  readonly maxStderrBytes?: number;
  /**
   * Secrets to keep out of what the host quotes of the process (the end of its stderr when it fails
   * to start): the gate's redactor, say. The values of `env` are always redacted from it.
   */
  readonly redactor?: Pick<Redactor, "redactText">;
  /** Default: warnings and errors to `console.warn`. */
  readonly onLog?: (event: ProcessLogEvent) => void;
  /**
   * Each `DispatchNotification` the process sends (at most 20 a second, each at most 64 Ki characters
   * of JSON; the rest dropped and logged). Its fields are the tool's unverified claim. Without this
   * option notifications are dropped with a debug log. A throw here is ignored.
   */
  readonly onNotification?: (notification: ProcessNotification) => void;
  /**
   * Journal each notification that passed those bounds as an audit event `process.notification`
   * (the gate's journal and redactor): data `{ process, callId?, notification: { claimedBy,
   * verified: false, text }, findings? }`, the text the frame's fields as canonical JSON, made
   * plain and redacted, `findings` the instruction-like phrasing found in it. Operators read them
   * with `toolgate audit tail` (`--json` for the text). A journal that fails is logged, never fatal.
   */
  readonly audit?: NotificationAudit;
}

export type ToolProcessState = "ready" | "restarting" | "stopped" | "dead";

export interface ToolProcessStatus {
  readonly name: string;
  readonly state: ToolProcessState;
  /** The running child's pid (the sandbox wrapper's, when there is one). */
  readonly pid: number | undefined;
  readonly restarts: number;
  readonly pendingCalls: number;
  /** Why the last process ended, when one has. */
  readonly lastError: string | undefined;
}

/** A running tool process, as the host holds it. */
export interface ToolProcessHandle {
  readonly name: string;
  /** Goes into `createToolRegistry` like any other family; `kind: "process"`. */
  readonly family: ToolFamily;
  /** What the process declared in its `ToolRegister` (all of it, registered or not). */
  readonly declared: readonly DeclaredTool[];
  /** Ids of the tools that were registered. */
  readonly toolIds: readonly string[];
  status(): ToolProcessStatus;
  /** The last bytes of the current process's stderr. */
  stderrTail(): string;
  /**
   * `ToolShutdown`, then SIGKILL after the grace period; pending calls fail with `tool_process_dead`.
   * Returns once the process has exited, whatever it left holding its pipes. Idempotent.
   */
  stop(): Promise<void>;
}
