export { callProvider } from "./call-provider.js";
export type { CallPolicy } from "./call-provider.js";
export { isTransient, sanitizeProviderMessage, toolErrorOf } from "./provider-failure.js";
export type { ProviderFailure, ProviderRequest } from "./provider-failure.js";
export { delayBefore, headerValue, parseRetryAfter, resolveRetry, sleep } from "./retry.js";
export type { ResolvedRetry, RetryOptions, Sleep } from "./retry.js";
