import {
  addConnectionFromFile,
  connectionStatus,
  listConnections,
  removeConnection,
  type Connection,
  type ConnectionStatus,
  type TokenVault,
} from "@toolgate/core/connectors";
import { printable } from "../printable.js";
import { CliFailure, EXIT, table, type Io } from "../output.js";
import type { Runtime } from "../runtime.js";

export function vaultOf(runtime: Runtime): TokenVault {
  if (!runtime.vault)
    throw new CliFailure(
      "this configuration names no token vault",
      EXIT.config,
      'add vault: { key: { env: "TOOLGATE_VAULT_KEY" } } to the composition file (the vault is kept in the state directory), and set TOOLGATE_VAULT_KEY (docs/operating.md, "The token vault")',
    );
  return runtime.vault;
}

/** Whom a connection serves, as `connections add` and `connections connect` take it. */
export interface ConnectionOptions {
  readonly id: string;
  readonly provider: string;
  readonly tenant?: string;
  readonly principal?: string;
  readonly default?: boolean;
}

export const connectionOf = (options: ConnectionOptions): Connection => ({
  id: options.id,
  provider: options.provider,
  ...(options.tenant ? { tenant: options.tenant } : {}),
  ...(options.principal ? { principal: options.principal } : {}),
  ...(options.default ? { isDefault: true } : {}),
});

export const renderConnections = (rows: readonly ConnectionStatus[]): string =>
  table(
    ["connection", "provider", "serves", "state", "expires", "scopes"],
    rows.map((s) =>
      [
        s.id + (s.isDefault ? " (default)" : ""),
        s.provider,
        [s.tenant, s.principal].filter(Boolean).join(" / ") || "anyone",
        s.state,
        s.expiresAt ?? "-",
        s.scopes.join(" "),
      ].map(printable),
    ),
  );

export async function connectionsAdd(runtime: Runtime, options: ConnectionOptions & { file: string; scopes?: string }, io: Io): Promise<number> {
  const status = await addConnectionFromFile({
    vault: vaultOf(runtime),
    file: options.file,
    connection: connectionOf(options),
    ...(options.scopes ? { scopes: options.scopes.split(/[ ,]+/).filter(Boolean) } : {}),
  });
  io.out(renderConnections([status]));
  return EXIT.ok;
}

export async function connectionsStatus(runtime: Runtime, id: string | undefined, options: { json: boolean }, io: Io): Promise<number> {
  const vault = vaultOf(runtime);
  const rows = id ? [await connectionStatus(vault, id)] : await listConnections(vault);
  if (options.json) io.out(JSON.stringify(rows, null, 2));
  else io.out(rows.length === 0 ? "no connections" : renderConnections(rows));
  return rows.some((r) => r.state === "reauth_required") ? EXIT.failed : EXIT.ok;
}

export async function connectionsRevoke(runtime: Runtime, id: string, io: Io): Promise<number> {
  if (!(await removeConnection(vaultOf(runtime), id))) throw new CliFailure(`no connection ${id}`, EXIT.failed, "toolgate connections status lists them");
  io.out(`removed ${id} from the vault; revoke the grant at the provider too if it may have leaked`);
  return EXIT.ok;
}
