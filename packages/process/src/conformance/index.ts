export { runConformance, CONFORMANCE_CHECKS } from "./run-conformance.js";
export type { ConformanceOptions, ConformanceReport, ConformanceCheck } from "./run-conformance.js";
export { runConformanceCli } from "./cli.js";
