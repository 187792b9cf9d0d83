/** The family's permission tokens. */
export const REPO_PERMISSIONS = ["repo:read", "repo:write", "repo:check", "repo:commit"] as const;
export type RepoPermission = (typeof REPO_PERMISSIONS)[number];
