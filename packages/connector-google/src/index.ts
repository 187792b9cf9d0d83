export { createGoogleConnector, GOOGLE_TOKEN_URL, GOOGLE_PROVIDER } from "./google-connector.js";
export type { GoogleConnectorOptions } from "./google-connector.js";
export { callGoogle, failureOf, resolveRetry } from "./google-call.js";
export type { RetryOptions, ResolvedRetry, CallPolicy, GoogleFailure } from "./google-call.js";
