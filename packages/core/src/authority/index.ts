export { createAuthority, checkDecider } from "./create-authority.js";
export type { CreateAuthorityOptions } from "./create-authority.js";
export { switchFor } from "./switches.js";
export type {
  Approver,
  Authority,
  AuthorityAction,
  KillSwitch,
  McpClient,
  Operator,
  OperatorRole,
  OperatorScope,
  OperatorStatus,
  RecordJournal,
} from "./types.js";
