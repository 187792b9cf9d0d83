export { createRepoTools } from "./repo-tools.js";
export type { RepoToolFamily } from "./repo-tools.js";
export { DEFAULT_LIMITS } from "./runtime.js";
export type { RepoToolsOptions, RepoCheck, RepoLimits } from "./runtime.js";
export { REPO_PERMISSIONS } from "./shared.js";
export type { RepoPermission } from "./shared.js";
export { repoGitCommands, repoGitEnv } from "./git.js";
export type { GitCommandName, GitIdentity, RepoGitCommandsOptions } from "./git.js";
