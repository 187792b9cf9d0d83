// Register an OpenTelemetry SDK once at start-up (in toolgate.config.ts, or your host's entry
// point): the gate reports through the API only, so any SDK and exporter works. The OTLP exporters
// send to OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318).
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";

export const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
export const meterProvider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter() })] });

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable()); // spans join the caller's trace
trace.setGlobalTracerProvider(tracerProvider);
metrics.setGlobalMeterProvider(meterProvider);
// At shutdown: await tracerProvider.shutdown() and meterProvider.shutdown(), which send what is left.
