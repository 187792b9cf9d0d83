/**
 * @toolgate/core/boundary — what a family uses to touch the host safely: a root guard for paths,
 * the verifier (operator-declared commands, optionally sandboxed) and the artifact workspace.
 */
export { resolveWithinRoot, createRootGuard, MAX_CANDIDATE_LENGTH } from "./boundary/resolve-within-root.js";
export type { ResolveWithinRootOptions, RootGuard, PathRefusalReason } from "./boundary/resolve-within-root.js";
export { protectPath, protectedPaths, isProtectedPath, isHardLinkToProtected } from "./boundary/protected-paths.js";
export { bubblewrapMasks } from "./boundary/verifier-sandbox.js";
export { createVerifier, DEFAULT_SANDBOX_READ_ONLY_PATHS, TRUNCATION_MARKER } from "./boundary/verifier.js";
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
