import type { Connection, TokenSet, TokenVault } from "./types.js";
import { ToolError } from "../errors.js";
import { describeIssues, vaultDataSchema, vaultOver, type VaultData } from "./vault-store.js";

export interface MemoryVaultOptions {
  /** Connections to start with. */
  readonly connections?: readonly { readonly connection: Connection; readonly tokens: TokenSet }[];
  /** Milliseconds since the epoch, for `updatedAt`; default `Date.now`. */
  readonly clock?: () => number;
}

/**
 * A vault that keeps token sets in memory, for tests and short-lived scripts. It behaves exactly
 * like the file vault (validation, one default per provider, copies in and out) without a file.
 */
export function createMemoryVault(options: MemoryVaultOptions = {}): TokenVault {
  const clock = options.clock ?? Date.now;
  let state: VaultData = { connections: {} };
  for (const { connection, tokens } of options.connections ?? []) {
    state.connections[connection.id] = { connection: structuredClone(connection), tokens: structuredClone(tokens), updatedAt: clock() };
  }
  const checked = vaultDataSchema.safeParse(state);
  if (!checked.success) throw new ToolError("config_invalid", `invalid initial connections for the memory vault: ${describeIssues(checked.error)}`);
  const defaults = Object.values(state.connections).filter((e) => e.connection.isDefault === true);
  if (new Set(defaults.map((e) => e.connection.provider)).size !== defaults.length) {
    throw new ToolError("config_invalid", "the memory vault's initial connections name more than one default for a provider");
  }
  return vaultOver(
    {
      location: "memory",
      load: async () => structuredClone(state),
      save: async (data) => {
        state = structuredClone(data);
      },
    },
    clock,
  );
}
