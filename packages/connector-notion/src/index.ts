export {
  createNotionConnector,
  notionIntegrationTokens,
  exchangeNotionCode,
  NOTION_PROVIDER,
  NOTION_CAPABILITIES,
  NOTION_API_URL,
  NOTION_VERSION,
  NEVER_EXPIRES,
} from "./notion-connector.js";
export type { NotionConnectorOptions, NotionAccess, NotionCapability, ExchangeNotionCodeOptions } from "./notion-connector.js";
export { callNotion, notionFailureOf } from "./notion-call.js";
