export { createGmailTools, GMAIL_PERMISSIONS } from "./gmail-tools.js";
export { GMAIL_ROOT_URL, GMAIL_SCOPES, SEND_CONSENT } from "./options.js";
export type { GmailToolsOptions } from "./options.js";
export type { RetryOptions } from "@toolgate/provider-call";
