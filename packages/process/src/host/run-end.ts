import { ToolError } from "@toolgate/core";
import type { SandboxLimitName, SandboxLimits } from "@toolgate/core/boundary";

/** A sandbox's end of a run (core's `SandboxLaunch.finish`): the limits the process hit, once it exited. */
export type RunEnd = (exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null }) => SandboxLimitName[];

/**
 * End a run: `limit_exceeded` (`details: { limit, value }`) when the sandbox says the process hit a
 * limit, else undefined. A sandbox that cannot say is logged, never fatal: the process is gone anyway.
 */
export function limitFailure(
  finish: RunEnd,
  exit: Parameters<RunEnd>[0],
  limits: SandboxLimits,
  exitDescription: string,
  warn: (message: string) => void,
): ToolError | undefined {
  let hit: SandboxLimitName[] = [];
  try {
    hit = finish(exit);
  } catch (error) {
    warn(`the sandbox's end of run failed: ${(error as Error).message}`);
  }
  const limit = hit[0];
  if (limit === undefined) return undefined;
  const value = limits[limit];
  const others = hit.length > 1 ? ` (also ${hit.slice(1).join(", ")})` : "";
  return new ToolError("limit_exceeded", `tool process hit its ${limit} limit of ${value}${others} and ${exitDescription}`, { details: { limit, value } });
}

/** A set whose members are abandoned when the host process exits: killed at once, their runs ended. */
export function abandonedAtExit<T extends { abandon(): void }>(): Set<T> {
  const members = new Set<T>();
  process.once("exit", () => {
    for (const member of members) member.abandon();
  });
  return members;
}
