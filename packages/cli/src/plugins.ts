import type { CommandPlugin } from "./program.js";

/** Subcommands contributed by optional packages, loaded only when installed. */
export async function plugins(): Promise<CommandPlugin[]> {
  return [];
}
