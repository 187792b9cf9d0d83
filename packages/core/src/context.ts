/**
 * What a tool body receives. Everything that crosses a boundary is reached through here, already
 * scoped by the gate to the manifest that declared it. The gate's context makes `signal`, `effect`
 * and the functions when first read (functions read off it stay bound); they are accessors, so
 * read them from `ctx` rather than copying it with a spread.
 */
export interface ToolContext {
  /**
   * Aborts on the caller's cancellation or at the manifest's deadline. Pass it on. Reading it makes
   * an AbortController for this call; a body that only needs to learn of the abort uses `onAbort`.
   */
  readonly signal: AbortSignal;
  /**
   * Call `listener` once, with the reason (an Error), when the caller cancels or the deadline
   * passes: the same moments `signal` aborts, without making a controller. If the call is already
   * cancelled or past its deadline, `listener` is called synchronously, before `onAbort` returns.
   * Once the body has ended without an abort it is never called. A listener that throws is ignored.
   * Returns an unsubscribe (idempotent); call it when the work it guards is done.
   */
  onAbort(listener: (reason: Error) => void): () => void;
  /** The call's idempotency key. Forward it to the provider wherever the provider has one. */
  readonly idempotencyKey: string;
  /** Who and what this call is, for the body's own records. */
  readonly effect: EffectIdentity;
  /**
   * The `plan` of the preview a human approved for this very call (present only when the call was
   * approved); recovery's replay runs without one. Treat a missing plan as "not approved".
   */
  readonly plan: unknown;
  /** Report progress; redacted, then handed to the caller's `onProgress`. */
  progress(event: ProgressEvent): void;
  /** The authorized client for the manifest's `connector`; absent for tools without one. */
  readonly connector: ConnectorHandle | undefined;
  /** Runs operator-declared commands; absent when the gate has none. */
  readonly verifier: Verifier | undefined;
  /** Where the body may write run artifacts; absent when the gate has none. */
  readonly workspace: Workspace | undefined;
  /** Register a secret the body learned (it is then redacted everywhere). */
  registerSecret(value: string): void;
  /**
   * `text` with every secret the gate knows redacted. A body that cuts text (a size cap, an
   * excerpt) redacts first, so no cut leaves part of a secret for the gate to miss.
   */
  redactText(text: string): string;
}

/**
 * The narrower context a `preview(input, ctx)` gets: it may read, never act. Its connector opens
 * (and reads a token) only when the preview first calls `client()`; `connectionId` is empty until then.
 */
export interface PreviewContext {
  readonly signal: AbortSignal;
  readonly effect: EffectIdentity;
  readonly connector: ConnectorHandle | undefined;
  readonly workspace: Workspace | undefined;
}

export interface EffectIdentity {
  readonly toolId: string;
  readonly invocationId: string;
  readonly principal: string;
  readonly tenant: string;
}

export interface ProgressEvent {
  readonly message: string;
  /** 0..1 where known. */
  readonly fraction?: number;
  readonly data?: Readonly<Record<string, unknown>>;
  /** Set by the gate on an untrusted tool's progress: someone else's text (withheld when it reads like instructions). */
  readonly untrusted?: boolean;
}

/**
 * An authorized client for one provider, scoped to the manifest's scopes. Tools never see a token
 * string: they ask for the provider's client and use it.
 */
export interface ConnectorHandle {
  readonly provider: string;
  readonly connectionId: string;
  readonly scopes: readonly string[];
  /** The provider's authorized client (e.g. an OAuth2 client for Google, a Notion client). */
  client<TClient = unknown>(): Promise<TClient>;
}

/**
 * The token runtime as the gate sees it. `open` checks the manifest's scopes against the
 * connection's granted scopes before any token is read (`scope_missing`), and throws
 * `connector_unavailable` / `connector_reauth_required` as the connection's state requires.
 */
export interface ConnectorRuntime {
  open(request: ConnectorOpenRequest): Promise<ConnectorHandle>;
  /**
   * Optional: the checks of `open` that need no token — a provider, a connection for this caller,
   * the scopes granted. The gate runs it before asking a human to approve a call that could not run.
   */
  check?(request: ConnectorOpenRequest): Promise<void>;
}

export interface ConnectorOpenRequest {
  readonly provider: string;
  readonly scopes: readonly string[];
  readonly principal: string;
  readonly tenant: string;
  readonly toolId: string;
  readonly signal: AbortSignal;
  /** Secrets the runtime reads (tokens, client secrets) are registered here at once. */
  readonly registerSecret: (value: string) => void;
}

/** The outcome of one command run through the verifier. */
export interface VerifierRunResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly truncated: boolean;
  readonly durationMs: number;
  readonly timedOut: boolean;
}

export interface VerifierRunRequest {
  /** The operator-declared command's name, never an argv. */
  readonly command: string;
  readonly args?: readonly string[];
  /** Relative to the verifier's root; contained. */
  readonly cwd?: string;
  readonly signal?: AbortSignal;
}

/** The only way a tool runs a host command: allowlisted argv, no shell. */
export interface Verifier {
  readonly root: string;
  run(request: VerifierRunRequest): Promise<VerifierRunResult>;
}

/** A reference to an artifact in the workspace, safe to journal. */
export interface WorkspaceRef {
  readonly name: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** Where tools write run artifacts: contained names, size limits, atomic writes. */
export interface Workspace {
  readonly root: string;
  write(name: string, data: string | Uint8Array): Promise<WorkspaceRef>;
  read(name: string): Promise<Uint8Array>;
  list(): Promise<readonly WorkspaceRef[]>;
}
