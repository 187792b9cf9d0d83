/**
 * The gate's telemetry, through the OpenTelemetry API only (never an SDK): a span per call and per
 * step, and counters and histograms. The providers are the ones passed to `createGate`, or else the
 * global ones, looked up per call so an SDK registered after the gate is created is picked up.
 * With neither passed nor registered, a call gets `undefined` from `begin`: no clock read, no span,
 * no attribute object.
 */
import { createNoopMeter, metrics, ProxyTracerProvider, trace } from "@opentelemetry/api";
import type { Counter, Histogram, Meter, MeterProvider, Tracer, TracerProvider } from "@opentelemetry/api";
import { ToolError } from "../errors.js";
import type { Redactor } from "../redactor.js";
import { CallTrace, type TracedStart } from "./call-trace.js";

export interface TelemetryOptions {
  /** Spans go here; default: the global tracer provider, looked up per call. */
  readonly tracerProvider?: TracerProvider;
  /** Metrics go here; default: the global meter provider, looked up per call. */
  readonly meterProvider?: MeterProvider;
  /** Record `toolgate.principal` and `toolgate.tenant` on spans (default false: who called is not exported). */
  readonly recordPrincipal?: boolean;
}

/** The instruments of meter `@toolgate/core`. */
export interface Instruments {
  readonly calls: Counter;
  readonly refusals: Counter;
  readonly approvals: Counter;
  readonly stepDuration: Histogram;
  readonly invokeDuration: Histogram;
}

export interface GateTelemetry {
  /** The call's trace, or `undefined` when nothing records (the call then pays nothing more). */
  begin(start: TracedStart): CallTrace | undefined;
  /** A human granted or denied an approval request (counted by the desk); `edited`: granted with an approver's edit. */
  approvalDecided(toolId: string, decision: "granted" | "denied", facts?: { readonly edited?: boolean }): void;
}

export const METER_NAME = "@toolgate/core";
const TRACER_NAME = "@toolgate/core";
/** What the global proxy delegates to while no SDK is registered. */
const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();
const NOOP_METER = createNoopMeter();

export function createGateTelemetry(options: TelemetryOptions | undefined, redactor: Redactor): GateTelemetry {
  checkTelemetryOptions(options);
  const recordPrincipal = options?.recordPrincipal === true;
  let tracerFrom: TracerProvider | undefined;
  let tracer: Tracer | undefined;
  let meterFrom: MeterProvider | undefined;
  let instruments: Instruments | undefined;

  const activeTracer = (): Tracer | undefined => {
    const provider = options?.tracerProvider ?? globalTracerProvider();
    if (provider !== tracerFrom) {
      tracerFrom = provider;
      tracer = provider?.getTracer(TRACER_NAME);
    }
    return tracer;
  };
  const activeInstruments = (): Instruments | undefined => {
    const provider = options?.meterProvider ?? metrics.getMeterProvider();
    if (provider !== meterFrom) {
      meterFrom = provider;
      const meter = provider.getMeter(METER_NAME);
      instruments = meter === NOOP_METER ? undefined : createInstruments(meter);
    }
    return instruments;
  };

  return {
    begin(start) {
      try {
        const t = activeTracer();
        const m = activeInstruments();
        if (t === undefined && m === undefined) return undefined;
        return new CallTrace(t, m, start, redactor, recordPrincipal);
      } catch {
        return undefined; // a provider that throws records nothing; the call goes on
      }
    },
    approvalDecided(toolId, decision, facts) {
      try {
        activeInstruments()?.approvals.add(1, {
          "toolgate.tool.id": toolId,
          "toolgate.approval.decision": decision,
          ...(facts?.edited ? { "toolgate.approval.edited": true } : {}),
        });
      } catch {
        // a provider's failure is not the desk's
      }
    },
  };
}

/** The registered global tracer provider, or `undefined` while none is (the global proxy delegates to a no-op). */
function globalTracerProvider(): TracerProvider | undefined {
  const provider = trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  const delegate = typeof provider.getDelegate === "function" ? provider.getDelegate() : provider;
  return delegate === NOOP_TRACER_PROVIDER ? undefined : delegate;
}

function createInstruments(meter: Meter): Instruments {
  return {
    calls: meter.createCounter("toolgate.calls", { description: "Gate calls by tool and status" }),
    refusals: meter.createCounter("toolgate.refusals", { description: "Calls refused before any effect, by tool and code" }),
    approvals: meter.createCounter("toolgate.approvals", { description: "Approvals requested, granted and denied, by tool" }),
    stepDuration: meter.createHistogram("toolgate.step.duration", { unit: "s", description: "Time spent in each gate step" }),
    invokeDuration: meter.createHistogram("toolgate.invoke.duration", { unit: "s", description: "Time of a whole gate call" }),
  };
}

function checkTelemetryOptions(options: TelemetryOptions | undefined): void {
  if (options === undefined) return;
  const problems: string[] = [];
  if (options === null || typeof options !== "object") {
    problems.push("telemetry (an object)");
  } else {
    const { tracerProvider, meterProvider, recordPrincipal } = options;
    if (tracerProvider !== undefined && typeof (tracerProvider as Partial<TracerProvider> | null)?.getTracer !== "function") {
      problems.push("tracerProvider (with getTracer)");
    }
    if (meterProvider !== undefined && typeof (meterProvider as Partial<MeterProvider> | null)?.getMeter !== "function") {
      problems.push("meterProvider (with getMeter)");
    }
    if (recordPrincipal !== undefined && typeof recordPrincipal !== "boolean") problems.push("recordPrincipal (a boolean)");
  }
  if (problems.length > 0) throw new ToolError("config_invalid", `createGate's telemetry option is malformed: ${problems.join(", ")}`);
}
