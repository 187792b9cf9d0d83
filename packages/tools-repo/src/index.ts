export { createRepoTools } from "./repo-tools.js";
export type { RepoToolFamily } from "./repo-tools.js";
export { DEFAULT_LIMITS } from "./options.js";
export type { RepoToolsOptions, RepoCheck, RepoCheckSandbox, RepoLimits } from "./options.js";
export { DEFAULT_DENY } from "./deny.js";
export { REPO_PERMISSIONS } from "./permissions.js";
export type { RepoPermission } from "./permissions.js";
export { repoGitCommands, repoGitEnv } from "./git.js";
export type { GitCommandName, GitIdentity, RepoGitCommandsOptions } from "./git.js";
