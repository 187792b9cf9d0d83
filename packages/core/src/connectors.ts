/**
 * @toolgate/core/connectors — the token runtime a gate's connector tools use, its vaults, and the
 * operator functions that add, list and remove connections.
 */
export {
  createConnectorRuntime,
  chooseConnection,
  DEFAULT_REFRESH_LEEWAY_MS,
  DEFAULT_REFRESH_TIMEOUT_MS,
  DEFAULT_TOKEN_LIFETIME_MS,
} from "./connectors/runtime.js";
export type { CreateConnectorRuntimeOptions } from "./connectors/runtime.js";
export { createMemoryVault } from "./connectors/memory-vault.js";
export type { MemoryVaultOptions } from "./connectors/memory-vault.js";
export { createFileVault, generateVaultKey } from "./connectors/file-vault.js";
export type { FileVaultOptions, VaultKeySource } from "./connectors/file-vault.js";
export {
  addConnection,
  addConnectionFromFile,
  connectionStatus,
  LAST_DATE_MS,
  listConnections,
  parseTokenJson,
  removeConnection,
  setDefaultConnection,
} from "./connectors/operator.js";
export type { AddConnectionFromFileOptions, ConnectionStatus, StatusOptions } from "./connectors/operator.js";
export {
  TokenRefreshError,
  TOKEN_REFRESH_FAILURES,
  CONNECTION_ID_PATTERN,
  PROVIDER_NAME_PATTERN,
  tokenSetSchema,
  connectionSchema,
} from "./connectors/types.js";
export type {
  TokenSet,
  Connection,
  ConnectionInfo,
  TokenVault,
  ConnectorProvider,
  RefreshRequest,
  RefreshedTokens,
  AccessGrant,
  TokenRefreshFailure,
  ConnectorLogEvent,
} from "./connectors/types.js";
export type { ConnectorRuntime, ConnectorOpenRequest, ConnectorHandle } from "./context.js";
