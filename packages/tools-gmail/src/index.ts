export { createGmailTools } from "./gmail-tools.js";
export { GMAIL_PERMISSIONS, GMAIL_SCOPES, SEND_CONSENT } from "./permissions.js";
export type { GmailPermission } from "./permissions.js";
export { GMAIL_ROOT_URL } from "./options.js";
export type { GmailToolsOptions } from "./options.js";
export type { RetryOptions } from "@toolgate/provider-call";
