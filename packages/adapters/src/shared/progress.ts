import type { ProgressEvent } from "@toolgate/core";

/**
 * One progress event of a gate call, as a framework sees it: what the tool reported through
 * `ctx.progress` after the gate redacted it (an untrusted tool's text is marked, and withheld when
 * it reads like instructions). `status: "progress"` tells it from the final `ok` result.
 */
export interface GateProgress {
  readonly status: "progress";
  readonly toolId: string;
  readonly message: string;
  /** 0..1 where known. */
  readonly fraction?: number;
  readonly data?: Readonly<Record<string, unknown>>;
  readonly untrusted?: boolean;
}

/** Events kept for one call before the framework reads them; past it the oldest are dropped. */
export const MAX_PROGRESS_BUFFERED = 256;

/**
 * A gate progress event as plain JSON (a framework may serialise it, or check that it is JSON):
 * a `data` that is not JSON (a bigint, a cycle, a function) is left out, never an exception.
 */
export function toGateProgress(toolId: string, event: ProgressEvent): GateProgress {
  let data: Record<string, unknown> | undefined;
  try {
    const json = event.data === undefined ? undefined : (JSON.parse(JSON.stringify(event.data)) as unknown);
    if (json !== null && typeof json === "object" && !Array.isArray(json)) data = json as Record<string, unknown>;
  } catch {
    data = undefined;
  }
  return {
    status: "progress",
    toolId,
    message: String(event.message),
    ...(typeof event.fraction === "number" && Number.isFinite(event.fraction) ? { fraction: event.fraction } : {}),
    ...(data === undefined ? {} : { data }),
    ...(event.untrusted === true ? { untrusted: true } : {}),
  };
}

/** Both listeners get each event; one that throws keeps the other from nothing. */
export function bothListeners(
  first: ((event: ProgressEvent) => void) | undefined,
  second: ((event: ProgressEvent) => void) | undefined,
): ((event: ProgressEvent) => void) | undefined {
  if (!first || !second) return first ?? second;
  return (event) => {
    try {
      first(event);
    } finally {
      second(event);
    }
  };
}

/**
 * Runs `start` (a gate call) and yields its progress as it comes, then returns the call's outcome.
 * Events that come faster than they are read are buffered up to `MAX_PROGRESS_BUFFERED`.
 */
export async function* streamProgress<T>(toolId: string, start: (onProgress: (event: ProgressEvent) => void) => Promise<T>): AsyncGenerator<GateProgress, T> {
  const queue: GateProgress[] = [];
  let wake: (() => void) | undefined;
  let finished = false;
  const settled = start((event) => {
    if (finished) return;
    queue.push(toGateProgress(toolId, event));
    if (queue.length > MAX_PROGRESS_BUFFERED) queue.shift();
    wake?.();
  }).then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  void settled.then(() => {
    finished = true;
    wake?.();
  });
  for (;;) {
    while (queue.length > 0) yield queue.shift()!;
    if (finished) break;
    await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
  }
  const outcome = await settled;
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
