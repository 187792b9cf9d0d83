/** Google OAuth scope URLs the emulated methods accept. */
const G = "https://www.googleapis.com/auth/";
const MAIL = "https://mail.google.com/";

/**
 * For each emulated method, the scopes Google accepts for it (any one suffices), as Google's
 * discovery documents list them. A token holding none of these gets 403 `insufficientPermissions`.
 */
export const METHOD_SCOPES = {
  "gmail.users.messages.list": [MAIL, `${G}gmail.modify`, `${G}gmail.readonly`, `${G}gmail.metadata`],
  "gmail.users.messages.get": [
    MAIL,
    `${G}gmail.addons.current.message.action`,
    `${G}gmail.addons.current.message.metadata`,
    `${G}gmail.addons.current.message.readonly`,
    `${G}gmail.metadata`,
    `${G}gmail.modify`,
    `${G}gmail.readonly`,
  ],
  "gmail.users.messages.send": [MAIL, `${G}gmail.addons.current.action.compose`, `${G}gmail.compose`, `${G}gmail.modify`, `${G}gmail.send`],
  "gmail.users.messages.modify": [MAIL, `${G}gmail.modify`],
  "gmail.users.messages.trash": [MAIL, `${G}gmail.modify`],
  "gmail.users.threads.get": [MAIL, `${G}gmail.addons.current.message.readonly`, `${G}gmail.metadata`, `${G}gmail.modify`, `${G}gmail.readonly`],
  "gmail.users.drafts.create": [MAIL, `${G}gmail.addons.current.action.compose`, `${G}gmail.compose`, `${G}gmail.modify`],
  "gmail.users.drafts.list": [MAIL, `${G}gmail.compose`, `${G}gmail.modify`, `${G}gmail.readonly`],
  "gmail.users.drafts.get": [MAIL, `${G}gmail.compose`, `${G}gmail.modify`, `${G}gmail.readonly`],
  "gmail.users.drafts.send": [MAIL, `${G}gmail.addons.current.action.compose`, `${G}gmail.compose`, `${G}gmail.modify`],
  "gmail.users.labels.list": [MAIL, `${G}gmail.labels`, `${G}gmail.metadata`, `${G}gmail.modify`, `${G}gmail.readonly`],
  "gmail.users.labels.create": [MAIL, `${G}gmail.labels`, `${G}gmail.modify`],
  "calendar.calendarList.list": [`${G}calendar`, `${G}calendar.readonly`, `${G}calendar.calendarlist`, `${G}calendar.calendarlist.readonly`],
  "calendar.events.list": [
    `${G}calendar`,
    `${G}calendar.readonly`,
    `${G}calendar.events`,
    `${G}calendar.events.readonly`,
    `${G}calendar.events.owned`,
    `${G}calendar.events.owned.readonly`,
    `${G}calendar.app.created`,
  ],
  "calendar.events.get": [
    `${G}calendar`,
    `${G}calendar.readonly`,
    `${G}calendar.events`,
    `${G}calendar.events.readonly`,
    `${G}calendar.events.owned`,
    `${G}calendar.events.owned.readonly`,
    `${G}calendar.app.created`,
  ],
  "calendar.events.insert": [`${G}calendar`, `${G}calendar.events`, `${G}calendar.events.owned`, `${G}calendar.app.created`],
  "calendar.events.patch": [`${G}calendar`, `${G}calendar.events`, `${G}calendar.events.owned`, `${G}calendar.app.created`],
  "calendar.events.delete": [`${G}calendar`, `${G}calendar.events`, `${G}calendar.events.owned`, `${G}calendar.app.created`],
  "calendar.freebusy.query": [`${G}calendar`, `${G}calendar.readonly`, `${G}calendar.freebusy`, `${G}calendar.events.freebusy`],
} as const satisfies Record<string, readonly string[]>;

/** The id of an emulated API method, as Google's discovery documents name it. */
export type GoogleMethodId = keyof typeof METHOD_SCOPES;

/** Fault-injection targets: every API method, plus the OAuth token endpoint. */
export type GoogleEndpointId = GoogleMethodId | "oauth2.authorize" | "oauth2.token" | "oauth2.revoke";

/** Scopes under which Gmail refuses a search query or a full body (metadata-only access). */
export const GMAIL_METADATA_SCOPE = `${G}gmail.metadata`;
