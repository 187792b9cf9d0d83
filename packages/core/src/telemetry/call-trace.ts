/**
 * One call's trace: a root span `toolgate.invoke` (a child of the caller's active context), a child
 * span `toolgate.<step>` per step that ran, the run step's body inside its span's context, and the
 * call's metrics. Every value that reaches an attribute passes the redactor first. Nothing here may
 * fail a call: what a provider throws is swallowed.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from "@opentelemetry/api";
import type { ProgressEvent } from "../context.js";
import type { CallOptions } from "../gate/gate.js";
import type { GateEnv } from "../gate/env.js";
import type { InvokeResult } from "../gate/results.js";
import type { CallProvenance } from "../provenance/types.js";
import type { Redactor } from "../redactor.js";
import type { RegisteredTool } from "../registry.js";
import type { Instruments } from "./gate-telemetry.js";

/** What a call's state may carry, read defensively: the host's call options and, once resolved, the tool. */
export interface TracedStart {
  readonly invocationId: string;
  readonly call?: CallOptions | undefined;
  readonly tool?: RegisteredTool | undefined;
}

interface TracedStep {
  readonly name: string;
  run(call: never, env: GateEnv): unknown;
}

type Finished = InvokeResult<unknown>;

/** Metrics name a tool the registry knows; a name a model made up is not a metric dimension. */
const UNKNOWN_TOOL = "(unknown)";

export class CallTrace {
  readonly #tracer: Tracer | undefined;
  readonly #instruments: Instruments | undefined;
  readonly #redactor: Redactor;
  readonly #recordPrincipal: boolean;
  readonly #started: number;
  readonly #root: Span | undefined;
  readonly #rootContext: Context;
  /** The latest stage of the call (recovery's first step returns a new object; the live steps write one). */
  #state: TracedStart;
  #open = true;
  /** What the provenance step judged, as attributes (words and a count only: never a judged value). */
  #provenance: Attributes | undefined;

  constructor(tracer: Tracer | undefined, instruments: Instruments | undefined, start: TracedStart, redactor: Redactor, recordPrincipal: boolean) {
    this.#tracer = tracer;
    this.#instruments = instruments;
    this.#redactor = redactor;
    this.#recordPrincipal = recordPrincipal;
    this.#state = start;
    this.#started = performance.now();
    const parent = context.active();
    if (tracer === undefined) {
      this.#rootContext = parent;
      return;
    }
    this.#root = tracer.startSpan(
      "toolgate.invoke",
      { kind: SpanKind.INTERNAL, attributes: { "gen_ai.operation.name": "execute_tool", "toolgate.invocation.id": start.invocationId } },
      parent,
    );
    this.#rootContext = trace.setSpan(parent, this.#root);
  }

  /** Run one step in its span; synchronous steps stay synchronous. */
  step(step: TracedStep, current: unknown, env: GateEnv): unknown {
    const at = this.#instruments === undefined ? 0 : performance.now();
    let span: Span | undefined;
    try {
      span = this.#tracer?.startSpan(`toolgate.${step.name}`, { attributes: { "toolgate.step": step.name } }, this.#rootContext);
    } catch {
      span = undefined;
    }
    let out: unknown;
    const judged = step.name === "provenance" ? current : undefined;
    try {
      out = span !== undefined && step.name === "run" ? this.#runInSpan(step, current, env, span) : step.run(current as never, env);
    } catch (error) {
      this.#stepEnded(step.name, span, at, undefined);
      throw error;
    }
    if (!(out instanceof Promise)) {
      this.#judged(judged, span);
      this.#stepEnded(step.name, span, at, out);
      return out;
    }
    return out.then(
      (value: unknown) => {
        this.#judged(judged, span);
        this.#stepEnded(step.name, span, at, value);
        return value;
      },
      (error: unknown) => {
        this.#stepEnded(step.name, span, at, undefined);
        throw error;
      },
    );
  }

  /** The call finished at `stepName`: attributes, events, metrics; the root span ends. Returns `result`. */
  finish(result: Finished, stepName: string): Finished {
    this.#open = false;
    try {
      const status = result.status;
      const toolId = this.#metricToolId();
      const refused = status === "denied" || (status === "error" && result.boundary === "pre_effect_refusal");
      const root = this.#root;
      if (root !== undefined) {
        root.setAttributes(this.#rootAttributes(result));
        if (refused) root.addEvent("toolgate.refusal", { "toolgate.error.code": result.code, "toolgate.step": stepName });
        if (status === "approval_required") root.addEvent("toolgate.approval_requested", { "toolgate.approval.request_id": result.requestId });
        if (status === "error") root.setStatus({ code: SpanStatusCode.ERROR, message: result.code });
        root.end();
      }
      const m = this.#instruments;
      if (m !== undefined) {
        m.calls.add(1, { "toolgate.tool.id": toolId, "toolgate.status": status });
        if (refused) m.refusals.add(1, { "toolgate.tool.id": toolId, "toolgate.error.code": result.code });
        if (status === "approval_required") m.approvals.add(1, { "toolgate.tool.id": toolId, "toolgate.approval.decision": "requested" });
        m.invokeDuration.record((performance.now() - this.#started) / 1000, { "toolgate.tool.id": toolId, "toolgate.status": status });
      }
    } catch {
      // a provider's failure is not the call's
    }
    return result;
  }

  /** The steps ended without a result (a step threw): the root span ends as an error. */
  close(): void {
    if (!this.#open) return;
    this.#open = false;
    try {
      this.#root?.setStatus({ code: SpanStatusCode.ERROR, message: "the call ended without a result" });
      this.#root?.end();
    } catch {
      // as above
    }
  }

  /** The run step (and the body it starts) runs in its span's context; the body's progress becomes span events. */
  #runInSpan(step: TracedStep, current: unknown, env: GateEnv, span: Span): unknown {
    const state = current as { call?: unknown };
    const call = state.call;
    if (call !== null && typeof call === "object") {
      const listener = (call as CallOptions).onProgress;
      // The run step hands its listener each event redacted (and, for untrusted output, marked or withheld).
      let events = 0;
      const onProgress = (event: ProgressEvent): void => {
        try {
          // A chatty body cannot grow a span without bound: the first events, each message cut.
          if (events++ < MAX_PROGRESS_EVENTS) span.addEvent("toolgate.progress", progressAttributes(event));
        } catch {
          // as above
        }
        listener?.(event);
      };
      try {
        (state as { call: CallOptions }).call = Object.create(call, { onProgress: { value: onProgress, enumerable: true } }) as CallOptions;
      } catch {
        // a frozen stage keeps its own listener
      }
    }
    // The step runs exactly once, whatever the context manager does (throws, never calls back, calls back twice).
    let ran: { value: unknown } | { error: unknown } | undefined;
    const once = (): unknown => {
      if (ran === undefined) {
        try {
          ran = { value: step.run(current as never, env) };
        } catch (error) {
          ran = { error };
        }
      }
      return "value" in ran ? ran.value : undefined;
    };
    try {
      context.with(trace.setSpan(this.#rootContext, span), once);
    } catch {
      // a context manager's failure is not the call's: the step runs outside the span's context
    }
    once();
    if ("error" in ran!) throw ran.error;
    return ran!.value;
  }

  /** After the provenance step: its verdict on the step's span and, later, the root's. The step writes it on the stage it was given, refused or not. */
  #judged(stage: unknown, span: Span | undefined): void {
    if (stage === undefined) return;
    try {
      this.#provenance = provenanceAttributes((stage as { provenance?: unknown }).provenance);
      if (this.#provenance !== undefined) span?.setAttributes(this.#provenance);
    } catch {
      // as above
    }
  }

  #stepEnded(name: string, span: Span | undefined, at: number, out: unknown): void {
    if (out !== undefined && out !== null && typeof out === "object" && (out as { status?: unknown }).status === undefined) {
      this.#state = out as TracedStart;
    }
    try {
      if (span !== undefined) {
        if (out === undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: "the step threw" });
        else if ((out as { status?: unknown }).status === "error") span.setStatus({ code: SpanStatusCode.ERROR, message: (out as { code: string }).code });
        span.end();
      }
      this.#instruments?.stepDuration.record((performance.now() - at) / 1000, { "toolgate.step": name, "toolgate.tool.id": this.#metricToolId() });
    } catch {
      // as above
    }
  }

  #metricToolId(): string {
    return this.#state.tool?.manifest.id ?? UNKNOWN_TOOL;
  }

  #rootAttributes(result: Finished): Attributes {
    const toolId = this.#text(result.toolId);
    const attributes: Attributes = {
      "toolgate.tool.id": toolId,
      "toolgate.invocation.id": result.invocationId,
      "toolgate.status": result.status,
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": toolId,
    };
    const tool = this.#state.tool;
    if (tool !== undefined) {
      attributes["toolgate.tool.family"] = tool.family;
      attributes["toolgate.tool.effect"] = tool.manifest.effect;
      attributes["toolgate.tool.risk"] = tool.manifest.risk;
    }
    if (result.status === "denied" || result.status === "error") {
      attributes["toolgate.error.code"] = result.code;
      attributes["toolgate.effect.boundary"] = result.boundary;
    }
    if ((result.status === "ok" || result.status === "error") && result.replayed === true) attributes["toolgate.replayed"] = true;
    const call: Partial<CallOptions> | undefined = typeof this.#state.call === "object" && this.#state.call !== null ? this.#state.call : undefined;
    const profile: unknown = call?.profile?.name;
    if (typeof profile === "string") attributes["toolgate.profile"] = this.#text(profile);
    if (typeof call?.callRef === "string") attributes["gen_ai.tool.call.id"] = this.#text(call.callRef);
    if (this.#provenance !== undefined) Object.assign(attributes, this.#provenance);
    if (this.#recordPrincipal) {
      if (typeof call?.principal === "string") attributes["toolgate.principal"] = this.#text(call.principal);
      if (typeof call?.tenant === "string") attributes["toolgate.tenant"] = this.#text(call.tenant);
    }
    return attributes;
  }

  #text(value: string): string {
    return this.#redactor.redactText(value);
  }
}

const VERDICTS = new Set(["trusted", "new", "untrusted", "violation"]);
const ACTIONS = new Set(["none", "escalated", "refused", "waived"]);

/**
 * A judgement as attributes: its verdict, what the step did, and how many fields carry untrusted
 * data. Never a field's value, path or why: those can hold secrets and someone else's text.
 */
export function provenanceAttributes(value: unknown): Attributes | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const p = value as Partial<CallProvenance>;
  if (typeof p.verdict !== "string" || !VERDICTS.has(p.verdict)) return undefined;
  const fields = Array.isArray(p.fields) ? p.fields : [];
  return {
    "toolgate.provenance.verdict": p.verdict,
    "toolgate.provenance.action": typeof p.action === "string" && ACTIONS.has(p.action) ? p.action : "none",
    "toolgate.provenance.untrusted_fields": fields.filter((f: { label?: unknown } | null) => f?.label === "untrusted").length,
  };
}

/** Progress events kept on one run span, and the characters kept of each message (already redacted whole). */
const MAX_PROGRESS_EVENTS = 64;
const MAX_PROGRESS_MESSAGE = 1000;

function progressAttributes(event: ProgressEvent): Attributes {
  const attributes: Attributes = { "toolgate.progress.message": String(event?.message ?? "").slice(0, MAX_PROGRESS_MESSAGE) };
  if (typeof event?.fraction === "number") attributes["toolgate.progress.fraction"] = event.fraction;
  if (event?.untrusted === true) attributes["toolgate.progress.untrusted"] = true;
  return attributes;
}
