export { startGoogleHarness } from "./google-harness.js";
export type { GoogleConnection, GoogleHarness, GoogleHarnessOptions } from "./google-harness.js";
