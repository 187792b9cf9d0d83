/** The family's permission tokens. */
export const GMAIL_PERMISSIONS = ["gmail:read", "gmail:compose", "gmail:send", "gmail:modify"] as const;
export type GmailPermission = (typeof GMAIL_PERMISSIONS)[number];

/** Google OAuth scopes the family's tools declare (the narrowest each needs). */
export const GMAIL_SCOPES = {
  readonly: "https://www.googleapis.com/auth/gmail.readonly",
  compose: "https://www.googleapis.com/auth/gmail.compose",
  send: "https://www.googleapis.com/auth/gmail.send",
  modify: "https://www.googleapis.com/auth/gmail.modify",
} as const;

/** The consent a profile must hold before any tool sends mail in the owner's name. */
export const SEND_CONSENT = "send-email-on-my-behalf";
