/**
 * @toolgate/core/boundary — what a family uses to touch the host safely: a root guard for paths,
 * the verifier (operator-declared commands, optionally sandboxed) and the artifact workspace.
 */
export { resolveWithinRoot, createRootGuard, MAX_CANDIDATE_LENGTH } from "./boundary/resolve-within-root.js";
export type { ResolveWithinRootOptions, RootGuard, PathRefusalReason } from "./boundary/resolve-within-root.js";
export { protectPath, protectedPaths, isProtectedPath, isHardLinkToProtected } from "./boundary/protected-paths.js";
export { bubblewrapMasks } from "./boundary/sandbox/mounts.js";
export { pathIsUnder } from "./boundary/path-under.js";
export {
  bwrapOnPath,
  DEFAULT_SANDBOX_READ_ONLY_PATHS,
  findBwrap,
  feedSandbox,
  SANDBOX_ARGS_FD,
  SANDBOX_SECCOMP_FD,
  sandboxStdio,
  sandboxCgroups,
  sandboxLaunch,
  sandboxUserNamespace,
  sandboxWorks,
} from "./boundary/sandbox/profile.js";
export type { SandboxFacts, SandboxLaunch, SandboxSpec } from "./boundary/sandbox/profile.js";
export { DEFAULT_SANDBOX_LIMITS, SANDBOX_LIMIT_NAMES, sandboxLimits } from "./boundary/sandbox/limits.js";
export type { SandboxLimitName, SandboxLimits } from "./boundary/sandbox/limits.js";
export { seccompDenied, seccompProgram, SECCOMP_ARCHES } from "./boundary/sandbox/seccomp.js";
export type { SeccompOptions } from "./boundary/sandbox/seccomp.js";
export { sandboxIsolation } from "./boundary/sandbox/isolation.js";
export { createVerifier, TRUNCATION_MARKER } from "./boundary/verifier.js";
export type {
  CreateVerifierOptions,
  CommandVerifier,
  VerifierCommand,
  VerifierCommandArgs,
  VerifierEnv,
  VerifierSandbox,
  BubblewrapSandbox,
} from "./boundary/verifier.js";
export { jsonBoundsProblem } from "./boundary/json-bounds.js";
export type { JsonBounds } from "./boundary/json-bounds.js";
export { createWorkspace } from "./boundary/workspace.js";
export type { CreateWorkspaceOptions, ArtifactWorkspace } from "./boundary/workspace.js";
export type { Verifier, VerifierRunRequest, VerifierRunResult, Workspace, WorkspaceRef } from "./context.js";
