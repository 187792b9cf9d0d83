export { createConnectorRuntime, chooseConnection, DEFAULT_REFRESH_LEEWAY_MS, DEFAULT_REFRESH_TIMEOUT_MS, DEFAULT_TOKEN_LIFETIME_MS } from "./runtime.js";
export type { CreateConnectorRuntimeOptions } from "./runtime.js";
export { createMemoryVault } from "./memory-vault.js";
export type { MemoryVaultOptions } from "./memory-vault.js";
export { createFileVault, generateVaultKey } from "./file-vault.js";
export type { FileVaultOptions, VaultKeySource } from "./file-vault.js";
export {
  addConnection,
  addConnectionFromFile,
  connectionStatus,
  listConnections,
  parseTokenJson,
  removeConnection,
  setDefaultConnection,
} from "./operator.js";
export type { AddConnectionFromFileOptions, ConnectionStatus, StatusOptions } from "./operator.js";
export {
  TokenRefreshError,
  TOKEN_REFRESH_FAILURES,
  CONNECTION_ID_PATTERN,
  PROVIDER_NAME_PATTERN,
  tokenSetSchema,
  connectionSchema,
} from "./types.js";
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
} from "./types.js";
