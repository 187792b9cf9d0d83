export { createGoogleConnector, GOOGLE_TOKEN_URL, GOOGLE_PROVIDER } from "./google-connector.js";
export type { GoogleConnectorOptions } from "./google-connector.js";
export { callGoogle, googleFailureOf } from "./google-call.js";
