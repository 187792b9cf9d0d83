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
  createMemoryVault,
  createFileVault,
  generateVaultKey,
  addConnection,
  addConnectionFromFile,
  connectionStatus,
  listConnections,
  parseTokenJson,
  removeConnection,
  setDefaultConnection,
  TokenRefreshError,
  TOKEN_REFRESH_FAILURES,
  CONNECTION_ID_PATTERN,
  PROVIDER_NAME_PATTERN,
  tokenSetSchema,
  connectionSchema,
} from "./connectors/index.js";
export type {
  CreateConnectorRuntimeOptions,
  MemoryVaultOptions,
  FileVaultOptions,
  VaultKeySource,
  AddConnectionFromFileOptions,
  ConnectionStatus,
  StatusOptions,
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
} from "./connectors/index.js";
export type { ConnectorRuntime, ConnectorOpenRequest, ConnectorHandle } from "./context.js";
