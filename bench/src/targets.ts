import { loadavg } from "node:os";

/** One figure the bench is held to, as printed beside its target. */
export interface TargetFigure {
  /** What was measured, e.g. "tool process vs MCP stdio, sequential". */
  readonly label: string;
  /** The measured value, already in `unit`. */
  readonly value: number;
  /** `×` for ratios, `µs`, `calls/s`, `ms`. */
  readonly unit: string;
  /** `at-least` when higher is better, `at-most` when lower is better. */
  readonly direction: "at-least" | "at-most";
  readonly target: number;
}

const recorded: (TargetFigure & { readonly met: boolean })[] = [];

const digits = (value: number): string => (Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 10 ? value.toFixed(1) : value.toFixed(2));
const show = (value: number, unit: string): string => (unit === "×" ? `×${digits(value)}` : `${digits(value)} ${unit}`);

/**
 * Record a figure against its target and return the line to print: value, target and whether it
 * is met. Every recorded figure is repeated in the summary that ends `npm run bench`.
 */
export function target(figure: TargetFigure): string {
  const met = Number.isFinite(figure.value) && (figure.direction === "at-least" ? figure.value >= figure.target : figure.value <= figure.target);
  recorded.push({ ...figure, met });
  return targetText({ ...figure, met });
}

function targetText(figure: TargetFigure & { readonly met: boolean }): string {
  const goal = `${figure.direction === "at-least" ? "≥" : "≤"} ${show(figure.target, figure.unit)}`;
  return `${figure.label.padEnd(58)} ${show(figure.value, figure.unit).padStart(14)}   target ${goal.padEnd(16)} ${figure.met ? "met" : "NOT MET"}`;
}

/** What a section holds itself to: a figure without its value. */
export type TargetSpec = Omit<TargetFigure, "value">;

/** Record each of `specs` not yet recorded as missing (not met), for a section that failed before it measured them. */
export function missingTargets(specs: readonly TargetSpec[]): string[] {
  return specs.filter((spec) => !recorded.some((r) => r.label === spec.label)).map((spec) => target({ ...spec, value: NaN }));
}

/** The summary: every target recorded in this run, and the machine's load average now. */
export function targetSummary(): string[] {
  const met = recorded.filter((f) => f.met).length;
  return [`targets — ${met} of ${recorded.length} met; load average now ${loadText()}`, ...recorded.map(targetText)];
}

/** The 1, 5 and 15 minute load averages. */
export function loadText(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
}
