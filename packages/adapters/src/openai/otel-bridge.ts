import { createCustomSpan, getCurrentSpan, getCurrentTrace, type CustomSpanData, type Span as AgentsSpan } from "@openai/agents";
import {
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type AttributeValue,
  type Context,
  type Span,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type TimeInput,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { randomBytes } from "node:crypto";
import { GATE_SPAN_NAME, isGateCallSpan } from "./trace.js";

/** Events kept on one span's data (progress may come often). */
const MAX_EVENTS = 64;

/**
 * A tracer provider for `createGate({ telemetry: { tracerProvider } })` that turns the gate's own
 * spans into custom spans of the Agents SDK's current trace: the call (`toolgate.invoke`, with its
 * attributes) and one span per step (`toolgate.validate`, `toolgate.run`, …), each with its start
 * and end, so the step timings show in the Agents trace. The span events (refusal, approval,
 * progress) go on the span's data as `events`. Inside a call made through `toOpenAITools`, the
 * call's span is the adapter's own `toolgate.invoke` span (one span, not two). Outside an Agents
 * trace nothing is recorded. The gate's metrics do not go here (pass a `meterProvider`).
 */
export function agentsTracerProvider(): TracerProvider {
  const tracer: Tracer = {
    startSpan: (name, options, parentContext) => startSpan(name, options, parentContext),
    startActiveSpan: ((name: string, ...rest: unknown[]) => {
      const fn = rest.at(-1) as (span: Span) => unknown;
      const options = (rest.length > 1 ? rest[0] : undefined) as SpanOptions | undefined;
      return fn(startSpan(name, options, (rest.length > 2 ? rest[1] : undefined) as Context | undefined));
    }) as Tracer["startActiveSpan"],
  };
  return { getTracer: () => tracer };
}

function startSpan(name: string, options: SpanOptions | undefined, parentContext: Context | undefined): Span {
  const parent = parentContext === undefined ? undefined : trace.getSpan(parentContext);
  let target: AgentsSpan<CustomSpanData> | undefined;
  let owned = true;
  if (parent instanceof BridgedSpan) {
    target = parent.target === undefined ? undefined : createCustomSpan({ data: { name, data: {} } }, parent.target);
  } else if (getCurrentTrace() !== null) {
    const current = getCurrentSpan();
    if (name === GATE_SPAN_NAME && current !== null && isGateCallSpan(current)) {
      // The adapter's span for this very call: the gate's spans go on and under it.
      target = current as AgentsSpan<CustomSpanData>;
      owned = false;
    } else {
      target = createCustomSpan({ data: { name, data: {} } });
    }
  }
  if (owned) target?.start();
  const span = new BridgedSpan(target, owned, parent?.spanContext().traceId);
  if (options?.attributes) span.setAttributes(options.attributes);
  return span;
}

/** An OpenTelemetry span backed by a custom span of the Agents SDK (or by nothing, outside a trace). */
class BridgedSpan implements Span {
  readonly #context: SpanContext;
  #ended = false;
  constructor(
    readonly target: AgentsSpan<CustomSpanData> | undefined,
    private readonly owned: boolean,
    traceId: string | undefined,
  ) {
    this.#context = {
      traceId: traceId ?? randomBytes(16).toString("hex"),
      spanId: randomBytes(8).toString("hex"),
      traceFlags: target === undefined ? TraceFlags.NONE : TraceFlags.SAMPLED,
    };
  }
  spanContext(): SpanContext {
    return this.#context;
  }
  setAttribute(key: string, value: AttributeValue): this {
    if (this.target !== undefined && value !== undefined) this.target.spanData.data[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes): this {
    for (const [key, value] of Object.entries(attributes)) if (value !== undefined) this.setAttribute(key, value);
    return this;
  }
  addEvent(name: string, attributesOrTime?: Attributes | TimeInput): this {
    if (this.target === undefined) return this;
    const data = this.target.spanData.data;
    const events = (Array.isArray(data.events) ? data.events : (data.events = [])) as unknown[];
    if (events.length >= MAX_EVENTS) return this;
    const attributes =
      attributesOrTime !== null && typeof attributesOrTime === "object" && !Array.isArray(attributesOrTime) && !(attributesOrTime instanceof Date);
    events.push({ name, at: new Date().toISOString(), ...(attributes ? { attributes: attributesOrTime } : {}) });
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    if (status.code === SpanStatusCode.ERROR) this.target?.setError({ message: status.message ?? "error" });
    return this;
  }
  updateName(): this {
    return this;
  }
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.owned) this.target?.end();
  }
  isRecording(): boolean {
    return this.target !== undefined && !this.#ended;
  }
  recordException(): void {}
}
