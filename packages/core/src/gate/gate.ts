import { randomBytes, randomUUID } from "node:crypto";
import type { z } from "zod";
import { canonicalJson, hashCanonical, sha256Hex } from "../canonical-json.js";
import type { ConnectorHandle, ConnectorOpenRequest, ConnectorRuntime, PreviewContext, ProgressEvent, ToolContext, Verifier, Workspace } from "../context.js";
import { ToolError, type EffectBoundary } from "../errors.js";
import type { GrantCheck, GrantOutcome, IntentInput, Journal, JournalReceipt, OutboxEntry, OutboxState } from "../journal/types.js";
import { isSideEffectful, jsonSchemaOf, type AnyToolManifest, type ApprovalPreview } from "../manifest.js";
import { evaluatePolicy, refusalFor, type PolicyDecision } from "../policy.js";
import type { Profile } from "../profile.js";
import { createRedactor, type Redactor } from "../redactor.js";
import { registryInternals, type RegisteredTool, type ToolById, type ToolIdOf, type ToolInput, type ToolOutput, type ToolRegistry } from "../registry.js";
import { fenceUntrusted, scanForInjection, type InjectionFinding } from "../untrusted.js";
import { checkGrant } from "../journal/grant-check.js";
import { HandlerRun } from "./run-handler.js";
import { createApprovalDesk, type ApprovalDesk, type ApprovalGrant } from "./approvals.js";
import type { ApprovalRequiredResult, DeniedResult, ErrorResult, InvokeResult, OkResult } from "./results.js";

export interface CreateGateOptions<TTool extends AnyToolManifest> {
  readonly registry: ToolRegistry<TTool>;
  readonly journal: Journal;
  /** The token runtime; required when any tool declares a `connector`. */
  readonly connectors?: ConnectorRuntime;
  readonly verifier?: Verifier;
  readonly workspace?: Workspace;
  /** Milliseconds since the epoch; default `Date.now`. Used for timestamps and expiry. */
  readonly clock?: () => number;
  /** Secret values redacted from every output, error, progress event and journal entry. */
  readonly secrets?: readonly string[];
  /** How long an approval request waits for a human; default 24 hours. */
  readonly approvalRequestTtlMs?: number;
  /** Largest canonical input accepted, in bytes; default 1 MiB. */
  readonly maxInputBytes?: number;
  /**
   * Without a caller's key, an identical side-effectful call within this window is a retry and is
   * replayed; after it, a new call. Default 10 minutes.
   */
  readonly derivedKeyWindowMs?: number;
}

/** Per-call facts from the host (never from the model). */
export interface CallOptions {
  readonly principal: string;
  readonly tenant: string;
  readonly profile: Profile;
  /** The caller's key. Without one, side-effectful calls get a key derived from tool, input, principal and tenant. */
  readonly idempotencyKey?: string;
  readonly approval?: ApprovalGrant;
  readonly signal?: AbortSignal;
  readonly onProgress?: (event: ProgressEvent) => void;
}

/** The input type for `invoke(id, …)`: typed for a known id, `unknown` for a string from a model. */
export type InputFor<TTool, TId extends string> = string extends ToolIdOf<TTool>
  ? unknown // a registry whose ids are not literal types (families built from arrays at run time)
  : TId extends ToolIdOf<TTool>
    ? ToolInput<ToolById<TTool, TId>>
    : string extends TId
      ? unknown
      : never;
export type OutputFor<TTool, TId extends string> = string extends ToolIdOf<TTool>
  ? unknown
  : TId extends ToolIdOf<TTool>
    ? ToolOutput<ToolById<TTool, TId>>
    : unknown;

/** Any gate, whatever its registry's tools: for functions that take a gate and do not care which. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyGate = Gate<any>;

export interface Gate<TTool extends AnyToolManifest = AnyToolManifest> {
  /**
   * Run one tool call through every step: resolve, freeze, validate, policy, approval,
   * idempotency, journal intent, execute, validate output, redact, fence, journal result.
   * Never throws for anything a call can do wrong; the result says what happened.
   */
  invoke<const TId extends string>(toolId: TId, input: InputFor<TTool, TId>, call: CallOptions): Promise<InvokeResult<OutputFor<TTool, TId>>>;
  readonly approvals: ApprovalDesk;
  readonly redactor: Redactor;
  readonly registry: ToolRegistry<TTool>;
  readonly journal: Journal;
  /** Wait for calls that outlived their deadline to settle in the journal (tests, shutdown). */
  drain(): Promise<void>;
}

const DEFAULT_REQUEST_TTL_MS = 24 * 60 * 60_000;
const DEFAULT_MAX_INPUT_BYTES = 1024 * 1024;
const MAX_PREVIEW_BYTES = 256 * 1024;
const MAX_KEY_LENGTH = 256;
const NO_FINDINGS: readonly InjectionFinding[] = Object.freeze([]);
/** Failures that may pass if the same call is tried again; a definite answer (not_found…) never does. */
const TRANSIENT_CODES: ReadonlySet<string> = new Set(["timeout", "cancelled", "rate_limited", "provider_unavailable", "handler_failed", "journal_failed", "tool_process_dead"]);

/** Everything one call carries from step to step. */
interface CallState {
  readonly invocationId: string;
  readonly requestedId: string;
  readonly call: CallOptions;
  readonly startedAt: number;
  tool?: RegisteredTool;
  inputHash?: string;
  inputJson?: string;
  parsed?: unknown;
  /** The idempotency key the caller sees and may pass back. */
  visibleKey?: string;
}

type Refusal = DeniedResult | ErrorResult;

export function createGate<TTool extends AnyToolManifest>(options: CreateGateOptions<TTool>): Gate<TTool> {
  if (!options?.registry) throw new ToolError("config_invalid", "createGate needs a registry");
  if (!options.journal) throw new ToolError("config_invalid", "createGate needs a journal");
  const { registry, journal } = options;
  const { tools } = registryInternals(registry);
  const clock = options.clock ?? Date.now;
  // Most events of a call fall in the same millisecond: format each millisecond once.
  let isoMs = Number.NaN;
  let isoText = "";
  const iso = (ms: number = clock()): string => {
    if (ms !== isoMs) {
      isoMs = ms;
      isoText = new Date(ms).toISOString();
    }
    return isoText;
  };
  const redactor = createRedactor(options.secrets ?? []);
  const requestTtlMs = options.approvalRequestTtlMs ?? DEFAULT_REQUEST_TTL_MS;
  const maxInputBytes = options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const derivedKeyWindowMs = options.derivedKeyWindowMs ?? 10 * 60_000;
  const pendingLate = new Set<Promise<unknown>>();
  // Invocation ids: a random per-gate prefix and a counter: unique across processes, cheap per call.
  const invocationPrefix = `${randomBytes(8).toString("hex")}_`;
  let invocationCounter = 0;
  // Profiles are frozen, so a tool's policy decision for a profile never changes: decide once.
  const decisions = new WeakMap<Profile, Map<string, PolicyDecision>>();

  for (const t of tools.values()) {
    if (t.manifest.connector && !options.connectors) {
      throw new ToolError("config_invalid", `tool ${t.manifest.id} needs connector ${t.manifest.connector.provider}, but the gate has no connectors`);
    }
  }

  // ---------- journaling helpers: everything written is redacted first ----------

  const audit = async (state: CallState, type: string, data: Record<string, unknown>): Promise<JournalReceipt | null> => {
    try {
      return await journal.append({
        type,
        at: iso(),
        invocationId: state.invocationId,
        toolId: state.tool?.manifest.id ?? String(state.requestedId).slice(0, 128),
        principal: safeString(state.call?.principal),
        tenant: safeString(state.call?.tenant),
        data: redactor.redact(data),
      });
    } catch {
      return null;
    }
  };

  const refuse = async (
    state: CallState,
    status: "denied" | "error",
    error: ToolError,
    extra: { issues?: ErrorResult["issues"]; inputSchema?: ErrorResult["inputSchema"] } = {},
  ): Promise<Refusal> => {
    const message = redactor.redactText(error.message);
    const details = error.details === undefined ? undefined : redactor.redact(error.details);
    const receipt = await audit(state, "call.refused", {
      code: error.code,
      message,
      boundary: "pre_effect_refusal",
      profile: state.call?.profile?.name ?? null,
      inputHash: state.inputHash ?? null,
      ...(extra.issues ? { issues: extra.issues } : {}),
    });
    const base = {
      toolId: state.tool?.manifest.id ?? String(state.requestedId).slice(0, 128),
      invocationId: state.invocationId,
      receipt,
      code: receipt === null ? ("journal_failed" as const) : error.code,
      message: receipt === null ? `${message} (and the journal could not record the refusal)` : message,
      boundary: "pre_effect_refusal" as const,
      ...(details === undefined ? {} : { details }),
    };
    return status === "denied"
      ? { status: "denied", ...base }
      : { status: "error", ...base, retryable: false, ...(extra.issues ? { issues: extra.issues } : {}), ...(extra.inputSchema ? { inputSchema: extra.inputSchema } : {}) };
  };

  // ---------- steps 1–4: resolve, freeze, validate, policy ----------

  const checkCall = (call: CallOptions): ToolError | undefined => {
    const problems: string[] = [];
    if (!call || typeof call !== "object") return new ToolError("config_invalid", "invoke needs call options { principal, tenant, profile }");
    if (typeof call.principal !== "string" || call.principal === "") problems.push("principal");
    if (typeof call.tenant !== "string" || call.tenant === "") problems.push("tenant");
    if (!call.profile || !Array.isArray(call.profile.allow)) problems.push("profile (from defineProfile)");
    if (call.idempotencyKey !== undefined && (typeof call.idempotencyKey !== "string" || call.idempotencyKey.length === 0 || call.idempotencyKey.length > MAX_KEY_LENGTH)) {
      problems.push(`idempotencyKey (1–${MAX_KEY_LENGTH} characters)`);
    }
    return problems.length === 0 ? undefined : new ToolError("config_invalid", `invoke's call options are missing or malformed: ${problems.join(", ")}`);
  };

  const resolveTool = (state: CallState): ToolError | undefined => {
    const tool = typeof state.requestedId === "string" ? tools.get(state.requestedId) : undefined;
    if (!tool) {
      return new ToolError("unknown_tool", `no tool named ${JSON.stringify(String(state.requestedId).slice(0, 128))}`, {
        details: { known: [...tools.values()].filter((t) => t.manifest.visibility !== "hidden").map((t) => t.manifest.id) },
      });
    }
    state.tool = tool;
    return undefined;
  };

  const freezeInput = (state: CallState, input: unknown): ToolError | undefined => {
    try {
      const json = canonicalJson(input);
      if (json.length > maxInputBytes || Buffer.byteLength(json, "utf8") > maxInputBytes) {
        return new ToolError("invalid_input", `input is larger than ${maxInputBytes} bytes`);
      }
      state.inputHash = sha256Hex(json);
      state.inputJson = json;
      // The handler's own copy: the caller keeps no reference into what was authorized.
      state.parsed = JSON.parse(json) as unknown;
      return undefined;
    } catch (cause) {
      return new ToolError("invalid_input", `input is not plain JSON: ${(cause as Error).message}`, { cause });
    }
  };

  /** Parse with the tool's schema; on failure, the error plus the issues and JSON Schema a model can retry with. */
  const validateInput = (state: CallState): { error: ToolError; issues: ErrorResult["issues"] } | undefined => {
    const manifest = state.tool!.manifest;
    let parsed: z.ZodSafeParseResult<unknown>;
    try {
      parsed = manifest.input.safeParse(state.parsed);
    } catch (cause) {
      return { error: new ToolError("invalid_input", `input for ${manifest.id} could not be validated: ${redactor.redactText(errorText(cause))}`, { cause }), issues: [] };
    }
    if (parsed.success) {
      state.parsed = parsed.data;
      return undefined;
    }
    const issues = parsed.error.issues.map((i: z.core.$ZodIssue) => ({ path: i.path.map(String).join(".") || "(root)", message: i.message, code: i.code }));
    return {
      error: new ToolError("invalid_input", `input for ${manifest.id} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`),
      issues,
    };
  };

  const checkPolicy = (state: CallState): ToolError | undefined => {
    const { profile } = state.call;
    const manifest = state.tool!.manifest;
    let perProfile = decisions.get(profile);
    if (!perProfile) decisions.set(profile, (perProfile = new Map()));
    let decision = perProfile.get(manifest.id);
    if (!decision) perProfile.set(manifest.id, (decision = evaluatePolicy(manifest, profile)));
    return decision.kind === "allow" ? undefined : refusalFor(manifest.id, profile, decision);
  };

  // ---------- step 5: approval ----------

  const approvalRequired = (state: CallState): boolean => {
    const rule: unknown = state.tool!.manifest.approval;
    if (rule === "never") return false;
    if (rule === "always") return true;
    try {
      return (rule as (input: unknown) => boolean)(state.parsed) !== false;
    } catch {
      return true; // a predicate that fails asks a human
    }
  };

  /** Run `work` under the tool's deadline and the caller's signal; throw `timeout`/`cancelled` past them. */
  const bounded = async <T>(state: CallState, what: string, work: (signal: AbortSignal) => T | Promise<T>): Promise<T> => {
    const manifest = state.tool!.manifest;
    const run = new HandlerRun(manifest.timeoutMs, state.call.signal);
    const started = run.start(() => work(run.signal));
    const outcome = started instanceof Promise ? await started : started;
    if (outcome.kind === "returned") return outcome.value as T;
    if (outcome.kind === "threw") throw outcome.error;
    outcome.late.catch(() => undefined);
    throw outcome.why === "timeout"
      ? new ToolError("timeout", `${what} for ${manifest.id} did not finish within ${manifest.timeoutMs} ms`)
      : new ToolError("cancelled", `${what} for ${manifest.id} was cancelled`);
  };

  const buildPreview = async (state: CallState): Promise<{ preview: ApprovalPreview; previewHash: string } | ToolError> => {
    const manifest = state.tool!.manifest;
    try {
      const raw = await bounded(state, "the preview", async (signal) => {
        const ctx: PreviewContext = {
          signal,
          effect: identity(state),
          connector: manifest.connector ? lazyConnector(state, signal) : undefined,
          workspace: options.workspace,
        };
        return manifest.preview!(state.parsed, ctx);
      });
      const problems = previewProblems(raw);
      if (problems) return new ToolError("preview_invalid", `${manifest.id} built an invalid preview: ${problems}`);
      const preview = redactor.redact(JSON.parse(canonicalJson(raw)) as ApprovalPreview);
      return { preview, previewHash: hashCanonical(preview) };
    } catch (cause) {
      if (ToolError.is(cause)) return cause;
      return new ToolError("preview_invalid", `${manifest.id} could not build its preview: ${redactor.redactText(errorText(cause))}`, { cause });
    }
  };

  const grantCheckFor = (state: CallState, grant: ApprovalGrant, previewHash: string): GrantCheck => ({
    requestId: grant.requestId,
    tokenHash: sha256Hex(String(grant.token)),
    binding: { toolId: state.tool!.manifest.id, inputHash: state.inputHash!, principal: state.call.principal, tenant: state.call.tenant, previewHash },
    invocationId: state.invocationId,
    at: iso(),
  });

  const grantRefusal = (outcome: Exclude<GrantOutcome, { status: "consumed" }>, requestId: string): ToolError =>
    ({
      unknown: () => new ToolError("approval_unknown", `no approval request ${requestId}`),
      not_granted: () => new ToolError("approval_invalid", `approval request ${requestId} has not been granted`),
      denied: () => new ToolError("approval_denied", `approval request ${requestId} was denied`),
      already_consumed: () => new ToolError("approval_consumed", `the grant for ${requestId} was already used`),
      expired: () => new ToolError("approval_expired", `the grant for ${requestId} has expired`),
      mismatch: () =>
        new ToolError("approval_invalid", `the grant for ${requestId} does not match this call (${(outcome.mismatched ?? []).join(", ")} differ)`, {
          details: { mismatched: outcome.mismatched ?? [] },
        }),
    })[outcome.status]();

  const requestApproval = async (
    state: CallState,
    kind: "call" | "output",
    preview: ApprovalPreview,
    previewHash: string,
    key: string,
    findings?: readonly InjectionFinding[],
  ): Promise<ApprovalRequiredResult | Refusal> => {
    const manifest = state.tool!.manifest;
    const now = clock();
    try {
      const { request, receipt } = await journal.requestApproval({
        id: `apr_${randomUUID()}`,
        kind,
        toolId: manifest.id,
        inputHash: state.inputHash!,
        principal: state.call.principal,
        tenant: state.call.tenant,
        previewHash,
        preview,
        target: targetOf(state),
        invocationId: state.invocationId,
        idempotencyKey: state.visibleKey!,
        createdAt: iso(now),
        expiresAt: iso(now + requestTtlMs),
      });
      return {
        status: "approval_required",
        reason: kind,
        toolId: manifest.id,
        invocationId: state.invocationId,
        receipt,
        requestId: request.id,
        preview: request.preview,
        previewHash: request.previewHash,
        expiresAt: request.expiresAt,
        idempotencyKey: state.visibleKey!,
        ...(findings ? { findings: findings.map((f) => ({ rule: f.rule, path: f.path })) } : {}),
      };
    } catch (cause) {
      return refuse(state, "error", new ToolError("journal_failed", "the approval request could not be recorded", { cause }));
    }
  };

  // ---------- step 6: idempotency ----------

  /**
   * The key the caller sees (and may pass back) and the journal's key, scoped to tenant and
   * principal so one tenant's keys can never collide with, or reveal, another's.
   */
  const keysFor = (state: CallState, previewHash: string | undefined): { visible: string; journalKey: string; fresh: boolean } => {
    const { call } = state;
    let visible: string;
    let fresh = false;
    if (call.idempotencyKey !== undefined) visible = call.idempotencyKey;
    else if (isSideEffectful(state.tool!.manifest.effect)) {
      // The same call, seen the same way (for approval tools: the same preview of the same state),
      // is a retry. A change in what the human would see makes it a new call.
      visible = `auto-${hashCanonical([state.tool!.manifest.id, state.inputHash, call.principal, call.tenant, previewHash ?? null])}`;
    } else {
      visible = `once-${state.invocationId}`;
      fresh = true;
    }
    // A fresh key is unique to this invocation already; only keys that can recur need scoping.
    return { visible, journalKey: fresh ? visible : hashCanonical([call.tenant, call.principal, visible]), fresh };
  };

  /** What an earlier attempt under the same key means for this one. */
  const onExisting = async (state: CallState, entry: OutboxEntry, key: string): Promise<InvokeResult<unknown> | { retake: readonly OutboxState[] }> => {
    const manifest = state.tool!.manifest;
    if (entry.toolId !== manifest.id || entry.inputHash !== state.inputHash || entry.principal !== state.call.principal || entry.tenant !== state.call.tenant) {
      return refuse(state, "denied", new ToolError("idempotency_conflict", "this idempotency key was already used for a different call"));
    }
    switch (entry.state) {
      case "pending":
        return refuse(state, "denied", new ToolError("idempotency_in_flight", "a call with this idempotency key is still running (or was interrupted; run outbox recovery)"));
      case "completed":
        // A derived key stands for "the same call, retried": after the retry window, an identical
        // call is a new one (pass an idempotency key to deduplicate for longer).
        if (state.call.idempotencyKey === undefined && Date.parse(entry.updatedAt) < clock() - derivedKeyWindowMs) return { retake: ["completed"] };
        return replay(state, entry, key);
      case "failed": {
        const retakeable =
          entry.boundary === "pre_effect_refusal" || entry.boundary === "effect_not_started" || (entry.boundary === "effect_failed" && manifest.retryable);
        if (retakeable) return { retake: ["failed"] };
        return replayedError(state, entry);
      }
      case "unknown":
        if (manifest.idempotent) return { retake: ["unknown"] };
        return refuse(
          state,
          "denied",
          new ToolError("effect_state_unknown", `an earlier attempt of ${manifest.id} with this key may have taken effect; an operator must resolve it before it can run again`),
        );
    }
  };

  const replay = async (state: CallState, entry: OutboxEntry, key: string): Promise<InvokeResult<unknown>> => {
    const result = entry.result!;
    if (result.heldBy !== undefined) {
      const released = await releaseHeld(state, entry);
      if (released !== true) return released;
    }
    const receipt = await audit(state, "call.replayed", { key, intentHash: entry.intentHash, outputHash: result.outputHash, originalInvocationId: entry.invocationId });
    return okResult(state, result.output, result.findings, true, receipt);
  };

  const replayedError = async (state: CallState, entry: OutboxEntry): Promise<ErrorResult> => {
    const receipt = await audit(state, "call.replayed", { key: entry.key, intentHash: entry.intentHash, code: entry.error?.code ?? null });
    return {
      status: "error",
      toolId: state.tool!.manifest.id,
      invocationId: state.invocationId,
      receipt,
      code: entry.error?.code ?? "handler_failed",
      message: entry.error?.message ?? "an earlier attempt with this key failed",
      boundary: entry.boundary,
      retryable: false,
      replayed: true,
    };
  };

  /** Output held for a human: released only by a grant for the held request. */
  const releaseHeld = async (state: CallState, entry: OutboxEntry): Promise<true | InvokeResult<unknown>> => {
    const requestId = entry.result!.heldBy!;
    const request = await journal.getApproval(requestId);
    const grant = state.call.approval;
    if (!request) return refuse(state, "error", new ToolError("approval_unknown", `held output's request ${requestId} is missing`));
    if (!grant || grant.requestId !== requestId) {
      if (request.status === "consumed") return true;
      return {
        status: "approval_required",
        reason: "output",
        toolId: state.tool!.manifest.id,
        invocationId: state.invocationId,
        receipt: null,
        requestId,
        preview: request.preview,
        previewHash: request.previewHash,
        expiresAt: request.expiresAt,
        idempotencyKey: state.visibleKey!,
        findings: entry.result!.findings.map((f) => ({ rule: f.rule, path: f.path })),
      };
    }
    const outcome = await journal.consumeGrant(grantCheckFor(state, grant, request.previewHash), {
      type: "output.released",
      at: iso(),
      invocationId: state.invocationId,
      toolId: entry.toolId,
      principal: entry.principal,
      tenant: entry.tenant,
      data: { requestId, key: entry.key },
    });
    if (outcome.status === "consumed" || outcome.status === "already_consumed") return true;
    return refuse(state, "denied", grantRefusal(outcome, requestId));
  };

  // ---------- steps 7–12: intent, execute, validate, redact, fence, result ----------

  const intentFor = (state: CallState, key: string): IntentInput => {
    const manifest = state.tool!.manifest;
    const redactedJson = redactor.redactText(state.inputJson!);
    const base = {
      key,
      invocationId: state.invocationId,
      toolId: manifest.id,
      principal: state.call.principal,
      tenant: state.call.tenant,
      inputHash: state.inputHash!,
      input: JSON.parse(redactedJson) as unknown,
      inputRedacted: redactedJson !== state.inputJson,
      effect: manifest.effect,
      idempotent: manifest.idempotent,
      target: targetOf(state),
      at: iso(),
    };
    return { ...base, intentHash: hashCanonical(base) };
  };

  const targetOf = (state: CallState): string | undefined => {
    const target = state.tool!.manifest.target;
    if (!target) return undefined;
    try {
      return redactor.redactText(String(target(state.parsed))).slice(0, 256);
    } catch {
      return undefined;
    }
  };

  const identity = (state: CallState) => ({
    toolId: state.tool!.manifest.id,
    invocationId: state.invocationId,
    principal: state.call.principal,
    tenant: state.call.tenant,
  });

  const connectorRequest = (state: CallState, signal: AbortSignal): ConnectorOpenRequest => {
    const manifest = state.tool!.manifest;
    return {
      provider: manifest.connector!.provider,
      scopes: manifest.connector!.scopes,
      principal: state.call.principal,
      tenant: state.call.tenant,
      toolId: manifest.id,
      signal,
      registerSecret: (value) => redactor.register(value),
    };
  };

  const openConnector = (state: CallState, signal: AbortSignal): Promise<ConnectorHandle> => options.connectors!.open(connectorRequest(state, signal));

  /**
   * A preview may read through the connector, but most never do: open it (and read a token) only
   * when the preview first asks for the client.
   */
  const lazyConnector = (state: CallState, signal: AbortSignal): ConnectorHandle => {
    const requirement = state.tool!.manifest.connector!;
    let opened: Promise<ConnectorHandle> | undefined;
    let connectionId = "";
    const open = (): Promise<ConnectorHandle> =>
      (opened ??= openConnector(state, signal).then((handle) => {
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
  };

  const okResult = (
    state: CallState,
    output: unknown,
    findings: readonly InjectionFinding[],
    replayed: boolean,
    receipt: JournalReceipt | null,
    canonicalOutput?: string,
  ): OkResult<unknown> => {
    const manifest = state.tool!.manifest;
    const json = canonicalOutput ?? canonicalJson(output ?? null);
    return {
      status: "ok",
      toolId: manifest.id,
      invocationId: state.invocationId,
      receipt,
      output,
      content: manifest.untrustedOutput ? fenceUntrusted(manifest.id, json, findings).text : json,
      untrusted: manifest.untrustedOutput,
      findings,
      replayed,
      idempotencyKey: state.visibleKey!,
    };
  };

  /** Record a failed call (in the outbox when it has an intent) and shape its result. */
  const settleFailure = async (state: CallState, key: string, intent: IntentInput | undefined, boundary: EffectBoundary, error: ToolError): Promise<ErrorResult> => {
    const manifest = state.tool!.manifest;
    const message = redactor.redactText(error.message);
    let receipt: JournalReceipt | null;
    if (intent) {
      try {
        receipt = await journal.settleIntent(key, {
          state: boundary === "effect_state_unknown" ? "unknown" : "failed",
          boundary,
          intentHash: intent.intentHash,
          invocationId: state.invocationId,
          at: iso(),
          error: { code: error.code, message },
          audit: { durationMs: clock() - state.startedAt },
        });
      } catch {
        receipt = null;
      }
    } else {
      receipt = await audit(state, "call.failed", { code: error.code, message, boundary, inputHash: state.inputHash });
    }
    const details = error.details === undefined ? undefined : redactor.redact(error.details);
    return {
      status: "error",
      toolId: manifest.id,
      invocationId: state.invocationId,
      receipt,
      code: error.code,
      message,
      boundary,
      retryable: error.retryable || (boundary !== "effect_state_unknown" && manifest.retryable && TRANSIENT_CODES.has(error.code)),
      ...(details === undefined ? {} : { details }),
    };
  };

  /** The error for a body that threw, and where its effect stands. */
  const thrownError = (manifest: AnyToolManifest, cause: unknown): [EffectBoundary, ToolError] => {
    if (ToolError.is(cause)) return [cause.boundary ?? "effect_failed", cause];
    const boundary: EffectBoundary = isSideEffectful(manifest.effect) ? "effect_state_unknown" : "effect_failed";
    return [boundary, new ToolError("handler_failed", `${manifest.id} failed: ${errorText(cause).slice(0, 500)}`, { cause })];
  };

  /** Cancelled or past its deadline once the body had started: a write's effect may have happened. */
  const abortedError = (manifest: AnyToolManifest, why: "timeout" | "cancelled"): [EffectBoundary, ToolError] => {
    const sideEffectful = isSideEffectful(manifest.effect);
    const boundary: EffectBoundary = sideEffectful ? "effect_state_unknown" : "effect_failed";
    return why === "timeout"
      ? [boundary, new ToolError("timeout", `${manifest.id} did not finish within ${manifest.timeoutMs} ms`, { retryable: !sideEffectful })]
      : [boundary, new ToolError("cancelled", `${manifest.id} was cancelled`)];
  };

  const contextFor = (state: CallState, key: string, run: HandlerRun, connector: ConnectorHandle | undefined): ToolContext => ({
    get signal() {
      return run.signal;
    },
    idempotencyKey: key,
    effect: identity(state),
    progress: (event: ProgressEvent) => {
      const listener = state.call.onProgress;
      if (!listener || run.aborted) return;
      try {
        listener(redactor.redact({ message: String(event?.message ?? ""), ...(event?.fraction === undefined ? {} : { fraction: event.fraction }), ...(event?.data ? { data: event.data } : {}) }));
      } catch {
        // a listener's failure is not the tool's
      }
    },
    connector,
    verifier: options.verifier,
    workspace: options.workspace,
    registerSecret: (value: string) => redactor.register(value),
  });

  // steps 8–12: execute, validate output, redact, scan and fence, journal the result
  const execute = async (state: CallState, key: string, intent: IntentInput | undefined): Promise<InvokeResult<unknown>> => {
    const tool = state.tool!;
    const manifest = tool.manifest;
    if (state.call.signal?.aborted) {
      return settleFailure(state, key, intent, "effect_not_started", new ToolError("cancelled", `${manifest.id} was cancelled before it started`));
    }
    const run = new HandlerRun(manifest.timeoutMs, state.call.signal);
    let connector: ConnectorHandle | undefined;
    if (manifest.connector) {
      try {
        connector = await bounded(state, "opening the connector", (signal) => openConnector(state, signal));
      } catch (cause) {
        const err = ToolError.is(cause) ? cause : new ToolError("connector_unavailable", `could not open connector ${manifest.connector.provider}`, { cause });
        return settleFailure(state, key, intent, "effect_not_started", err);
      }
    }
    const ctx = contextFor(state, key, run, connector);
    const started = run.start(() => tool.handler(state.parsed, ctx));
    const outcome = started instanceof Promise ? await started : started;
    if (outcome.kind === "aborted") {
      watchLate(state, key, intent, outcome.late);
      return settleFailure(state, key, intent, ...abortedError(manifest, outcome.why));
    }
    if (outcome.kind === "threw") return settleFailure(state, key, intent, ...thrownError(manifest, outcome.error));

    // step 9: validate output
    let checked: z.ZodSafeParseResult<unknown>;
    try {
      checked = manifest.output.safeParse(outcome.value);
    } catch (cause) {
      return settleFailure(state, key, intent, "effect_completed", new ToolError("output_invalid", `${manifest.id}'s output could not be validated`, { cause }));
    }
    if (!checked.success) {
      const issues = checked.error.issues.map((i: z.core.$ZodIssue) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`);
      return settleFailure(state, key, intent, "effect_completed", new ToolError("output_invalid", `${manifest.id} returned output that does not match its schema: ${issues.join("; ")}`));
    }
    // step 10: redact
    const output = redactor.redact(checked.data);
    // step 11: scan untrusted output (it is fenced when the result is shaped)
    const findings = manifest.untrustedOutput ? scanForInjection(output) : NO_FINDINGS;
    const outputJson = canonicalJson(output ?? null);
    const outputHash = sha256Hex(outputJson);
    const described = describe(manifest, output);
    const flagged = findings.length > 0 ? { flagged: findings.map((f) => f.rule) } : undefined;
    let held: ApprovalRequiredResult | Refusal | undefined;
    if (flagged && state.call.profile.onInjection === "hold") {
      const preview: ApprovalPreview = {
        summary: `Output of ${manifest.id} contains text that reads like instructions; release it to the model?`,
        details: { findings: findings.map((f) => ({ rule: f.rule, path: f.path, excerpt: f.excerpt })) },
      };
      held = await requestApproval(state, "output", preview, hashCanonical(preview), key, findings);
    }
    const heldBy = held?.status === "approval_required" ? held.requestId : undefined;
    // step 12: journal the result, bound to the intent
    let receipt: JournalReceipt | null;
    if (intent) {
      try {
        receipt = await journal.settleIntent(key, {
          state: "completed",
          boundary: "effect_completed",
          intentHash: intent.intentHash,
          invocationId: state.invocationId,
          at: iso(),
          result: { output, outputHash, untrusted: manifest.untrustedOutput, findings, ...(heldBy === undefined ? {} : { heldBy }) },
          audit: redactor.redact({ durationMs: clock() - state.startedAt, result: described, ...flagged }),
        });
      } catch {
        // The effect happened; the outbox entry stays pending for recovery. Say so rather than hide it.
        return {
          status: "error",
          toolId: manifest.id,
          invocationId: state.invocationId,
          receipt: null,
          code: "journal_failed",
          message: `${manifest.id} completed, but its result could not be journaled; recovery will find the intent`,
          boundary: "effect_completed",
          retryable: false,
        };
      }
    } else {
      receipt = await audit(state, "call.completed", { inputHash: state.inputHash, outputHash, result: described, durationMs: clock() - state.startedAt, ...flagged });
    }
    if (held) return held;
    return okResult(state, output, findings, false, receipt, outputJson);
  };

  /** A handler that outlived its deadline: its late result is journaled, never returned. */
  const watchLate = (state: CallState, key: string, intent: IntentInput | undefined, run: Promise<unknown>): void => {
    const manifest = state.tool!.manifest;
    const late = run.then(
      async (raw) => {
        const checked = manifest.output.safeParse(raw);
        const output = checked.success ? redactor.redact(checked.data) : undefined;
        const data = { late: true, valid: checked.success, ...(checked.success ? { outputHash: hashCanonical(output ?? null), result: describe(manifest, output) } : {}) };
        if (intent && checked.success && isSideEffectful(manifest.effect)) {
          // The effect did happen: record it so a retry with the same key replays instead of repeating.
          const findings = manifest.untrustedOutput ? scanForInjection(output) : [];
          await journal.settleIntent(key, {
            state: "completed",
            boundary: "effect_completed",
            intentHash: intent.intentHash,
            invocationId: state.invocationId,
            at: iso(),
            result: { output, outputHash: hashCanonical(output ?? null), untrusted: manifest.untrustedOutput, findings },
            audit: redactor.redact(data),
            eventType: "call.late_result",
          });
        } else {
          await audit(state, "call.late_result", data);
        }
      },
      async (cause: unknown) => {
        await audit(state, "call.late_result", { late: true, failed: true, message: redactor.redactText(errorText(cause)).slice(0, 500) });
      },
    );
    const tracked = late.catch(() => undefined).finally(() => pendingLate.delete(tracked));
    pendingLate.add(tracked);
  };

  // ---------- the pipeline ----------

  const invoke = async (requestedId: string, input: unknown, call: CallOptions): Promise<InvokeResult<unknown>> => {
    const state: CallState = { invocationId: `inv_${invocationPrefix}${(invocationCounter++).toString(36)}`, requestedId, call, startedAt: clock() };
    const callProblem = checkCall(call);
    if (callProblem) return refuse(state, "error", callProblem);

    // 1. resolve
    const unknown = resolveTool(state);
    if (unknown) return refuse(state, "error", unknown);
    if (call.signal?.aborted) return refuse(state, "error", new ToolError("cancelled", `${requestedId} was cancelled before it started`));
    // 2. freeze
    const unfrozen = freezeInput(state, input);
    if (unfrozen) return refuse(state, "error", unfrozen, { inputSchema: state.tool!.descriptor.inputSchema });
    // 3. validate
    const invalid = validateInput(state);
    if (invalid) return refuse(state, "error", invalid.error, { ...(invalid.issues ? { issues: invalid.issues } : {}), inputSchema: state.tool!.descriptor.inputSchema });
    // 4. policy
    const denial = checkPolicy(state);
    if (denial) return refuse(state, "denied", denial);

    const manifest = state.tool!.manifest;
    // 5a. the preview a human would approve: computed first, because it is part of what makes two
    // calls without a key the same call.
    const needsApproval = approvalRequired(state);
    let built: { preview: ApprovalPreview; previewHash: string } | undefined;
    if (needsApproval && manifest.connector && options.connectors?.check) {
      // Never ask a human to approve a call whose connection could not run it (no token is read).
      try {
        await bounded(state, "checking the connection", (signal) => options.connectors!.check!(connectorRequest(state, signal)));
      } catch (cause) {
        return refuse(state, "error", ToolError.is(cause) ? cause : new ToolError("connector_unavailable", `could not check connector ${manifest.connector.provider}`, { cause }));
      }
    }
    if (needsApproval) {
      const preview = await buildPreview(state);
      if (preview instanceof ToolError) return refuse(state, "error", preview);
      built = preview;
    }
    const { visible, journalKey: key, fresh } = keysFor(state, built?.previewHash);
    state.visibleKey = visible;
    // Pure tools need no outbox: nothing to recover. Held output needs one to be released from.
    const usesOutbox =
      manifest.effect !== "none" || call.idempotencyKey !== undefined || (manifest.untrustedOutput && call.profile.onInjection === "hold");

    // 6a. a completed call under the same key is replayed without running (or asking) again
    let existing: OutboxEntry | undefined;
    let existingOutcome: Awaited<ReturnType<typeof onExisting>> | undefined;
    if (usesOutbox && !fresh) {
      try {
        existing = await journal.getIntent(key);
      } catch (cause) {
        return refuse(state, "error", new ToolError("journal_failed", "the journal could not be read", { cause }));
      }
      if (existing?.state === "completed" || existing?.state === "pending") {
        existingOutcome = await onExisting(state, existing, key);
        if (!("retake" in existingOutcome)) return existingOutcome;
      }
    }

    // 5b. approval
    let grant: GrantCheck | undefined;
    if (built) {
      if (!call.approval) return requestApproval(state, "call", built.preview, built.previewHash, key);
      grant = grantCheckFor(state, call.approval, built.previewHash);
      // Check now, consume atomically with the intent: a mismatch leaves the grant usable.
      const request = await journal.getApproval(grant.requestId);
      const verdict = checkGrant(request, grant);
      if (!("ok" in verdict)) {
        await audit(state, "approval.refused", { requestId: grant.requestId, status: verdict.status, mismatched: verdict.mismatched ?? [] });
        return refuse(state, "denied", grantRefusal(verdict, grant.requestId));
      }
    }

    // 6b + 7. idempotency and the intent, atomically
    let intent: IntentInput | undefined;
    if (usesOutbox) {
      intent = intentFor(state, key);
      let retake: { attempts: number; states: readonly OutboxState[] } | undefined;
      if (existing) {
        // Failed and unknown entries are judged here, after approval; the rest were judged in 6a.
        const outcome = existingOutcome ?? (await onExisting(state, existing, key));
        if (!("retake" in outcome)) return outcome;
        retake = { attempts: existing.attempts, states: outcome.retake };
      }
      let begun;
      try {
        begun = await journal.beginIntent(intent, { ...(grant ? { grant } : {}), ...(retake ? { retake } : {}) });
      } catch (cause) {
        return refuse(state, "error", new ToolError("journal_failed", "the intent could not be recorded, so the call was not run", { cause }));
      }
      if (begun.status === "grant_refused") return refuse(state, "denied", grantRefusal(begun.outcome, grant!.requestId));
      if (begun.status === "existing") {
        const outcome = await onExisting(state, begun.entry, key);
        if (!("retake" in outcome)) return outcome;
        return refuse(state, "denied", new ToolError("idempotency_in_flight", "another attempt with this idempotency key started at the same time"));
      }
    } else if (grant) {
      const outcome = await journal.consumeGrant(grant, {
        type: "approval.used",
        at: iso(),
        invocationId: state.invocationId,
        toolId: manifest.id,
        principal: call.principal,
        tenant: call.tenant,
        data: { requestId: grant.requestId },
      });
      if (outcome.status !== "consumed") return refuse(state, "denied", grantRefusal(outcome, grant.requestId));
    }

    // 8–12.
    return execute(state, key, intent);
  };

  /**
   * Run a recovered intent's body again with the same idempotency key, under the authorization it
   * was recorded with. Only for entries the caller has claimed (see recoverOutbox).
   */
  const replayIntent = async (entry: OutboxEntry, signal: AbortSignal | undefined): Promise<InvokeResult<unknown>> => {
    const recoveryProfile = Object.freeze({ name: "recovery", allow: [], maxRisk: "critical", consents: [], egress: [], onInjection: "flag" }) as Profile;
    const state: CallState = {
      invocationId: `inv_${invocationPrefix}${(invocationCounter++).toString(36)}`,
      requestedId: entry.toolId,
      call: { principal: entry.principal, tenant: entry.tenant, profile: recoveryProfile, ...(signal ? { signal } : {}) },
      startedAt: clock(),
    };
    const unknownTool = resolveTool(state);
    if (unknownTool) throw unknownTool;
    const unfrozen = freezeInput(state, entry.input);
    if (unfrozen) throw unfrozen;
    if (state.inputHash !== entry.inputHash) throw new ToolError("journal_failed", `the recorded input of ${entry.key} no longer matches its hash`);
    const invalid = validateInput(state);
    if (invalid) throw invalid.error;
    state.visibleKey = entry.key;
    return execute(state, entry.key, intentOf(entry));
  };

  const gate: Gate<TTool> = {
    invoke: invoke as Gate<TTool>["invoke"],
    approvals: createApprovalDesk(journal, redactor, clock),
    redactor,
    registry,
    journal,
    async drain() {
      while (pendingLate.size > 0) await Promise.all([...pendingLate]);
    },
  };
  gateInternals.set(gate, { replayIntent, clock, redactor });
  return Object.freeze(gate);
}

/** @internal what recovery needs from a gate. */
export interface GateInternals {
  replayIntent(entry: OutboxEntry, signal: AbortSignal | undefined): Promise<InvokeResult<unknown>>;
  readonly clock: () => number;
  readonly redactor: Redactor;
}

const gateInternals = new WeakMap<object, GateInternals>();

/** @internal */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function internalsOfGate(gate: Gate<any>): GateInternals | undefined {
  return gateInternals.get(gate);
}

/** The intent an outbox entry was recorded with. */
export function intentOf(entry: OutboxEntry): IntentInput {
  return {
    key: entry.key,
    invocationId: entry.invocationId,
    toolId: entry.toolId,
    principal: entry.principal,
    tenant: entry.tenant,
    inputHash: entry.inputHash,
    input: entry.input,
    inputRedacted: entry.inputRedacted,
    effect: entry.effect,
    idempotent: entry.idempotent,
    target: entry.target,
    intentHash: entry.intentHash,
    at: entry.at,
  };
}

function safeString(value: unknown): string | undefined {
  return typeof value === "string" ? value.slice(0, 256) : undefined;
}

function errorText(cause: unknown): string {
  if (cause instanceof Error) return cause.message;
  try {
    return String(cause);
  } catch {
    return "unprintable error";
  }
}

function describe(manifest: AnyToolManifest, output: unknown): string | null {
  if (!manifest.describeResult) return null;
  try {
    return String(manifest.describeResult(output)).slice(0, 256);
  } catch {
    return null;
  }
}

function previewProblems(raw: unknown): string | undefined {
  if (raw === null || typeof raw !== "object") return "a preview must be an object { summary, details?, body? }";
  const p = raw as Partial<ApprovalPreview>;
  if (typeof p.summary !== "string" || p.summary.trim() === "") return "summary must be a non-empty string";
  if (p.body !== undefined && typeof p.body !== "string") return "body must be a string";
  if (p.details !== undefined && (p.details === null || typeof p.details !== "object" || Array.isArray(p.details))) return "details must be an object";
  let json: string;
  try {
    json = canonicalJson(raw);
  } catch (cause) {
    return `it is not plain JSON (${(cause as Error).message})`;
  }
  if (Buffer.byteLength(json) > MAX_PREVIEW_BYTES) return `it is larger than ${MAX_PREVIEW_BYTES} bytes`;
  return undefined;
}
