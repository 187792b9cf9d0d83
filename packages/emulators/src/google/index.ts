export { startGoogleEmulator } from "./google-emulator.js";
export type { StartGoogleEmulatorOptions, GoogleEmulator, EmulatorRequest, GmailInspector, CalendarInspector } from "./google-emulator.js";
export type { FaultRule, FaultScope, InjectedFault } from "./faults.js";
export type { AuthorizeOptions, OAuthClientCredentials, OAuthStats } from "./oauth.js";
export type { GmailFixture, GmailMessageSeed, SentMessage } from "./gmail/gmail-fixture.js";
export type { CalendarFixture, CalendarSeed, CalendarNotification } from "./calendar/calendar-store.js";
export { METHOD_SCOPES as GOOGLE_METHOD_SCOPES } from "./scopes.js";
export type { GoogleMethodId, GoogleEndpointId } from "./scopes.js";
