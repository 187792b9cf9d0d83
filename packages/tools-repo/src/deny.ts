import { lstat } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@toolgate/core";
import { isHardLinkToProtected, isProtectedPath } from "@toolgate/core/boundary";
import { globToRegExp } from "./text.js";

/**
 * Paths no tool of the family reads, lists, searches, diffs, writes, commits or lets a check see,
 * by default. Matched case-insensitively on the root-relative real path (and on the path as
 * spelled); a pattern that matches a directory covers everything under it.
 */
export const DEFAULT_DENY: readonly string[] = Object.freeze([
  ".git/",
  ".toolgate/",
  ".env",
  ".env.*",
  "*.pem",
  "*.key",
  "*.p12",
  "*.pfx",
  "*.keystore",
  "*.jks",
  "id_rsa*",
  "id_dsa*",
  "id_ecdsa*",
  "id_ed25519*",
  ".ssh/",
  ".gnupg/",
  ".aws/",
  ".azure/",
  ".kube/",
  ".docker/",
  ".config/gcloud/",
  ".npmrc",
  ".yarnrc.yml",
  ".pypirc",
  ".netrc",
  ".git-credentials",
  ".htpasswd",
  "credentials.json",
  "service-account*.json",
]);

/** The family's deny list, compiled. */
export interface DenyRules {
  /** Every pattern in force, defaults first. */
  readonly patterns: readonly string[];
  /** The pattern that denies `relative` (root-relative, `/`-separated), if any. */
  match(relative: string): string | undefined;
}

interface Compiled {
  readonly pattern: string;
  readonly regex: RegExp;
  /** Without a `/` inside: tested against each name on the path, not the path from the root. */
  readonly anyName: boolean;
}

function compile(pattern: unknown, where: string): Compiled {
  const bad = (why: string) => new ToolError("config_invalid", `${where} ${JSON.stringify(pattern)}: ${why}`);
  if (typeof pattern !== "string" || pattern.trim().length === 0) throw bad("must be a non-empty glob");
  if (pattern.includes("\0") || pattern.length > 500) throw bad("must be shorter than 500 characters, without NUL bytes");
  const body = pattern.replace(/\/+$/, "");
  if (body.length === 0 || body.startsWith("/") || body.split("/").some((s) => s === ".." || s === "."))
    throw bad("must be relative to the root, without . or .. names");
  const { regex } = globToRegExp(body);
  return { pattern, regex: new RegExp(regex.source, "i"), anyName: !body.includes("/") };
}

/**
 * The deny list in force: the defaults (less those named in `dropDefaults`, each exactly as in
 * {@link DEFAULT_DENY}), then `deny`. `.git` is refused by the family whatever the list says.
 *
 * @throws ToolError `config_invalid` for a bad pattern, or a `dropDefaults` entry that is not a default.
 */
export function compileDeny(deny: readonly string[] | undefined, dropDefaults: readonly string[] | undefined): DenyRules {
  if (deny !== undefined && !Array.isArray(deny)) throw new ToolError("config_invalid", "deny must be an array of globs");
  if (dropDefaults !== undefined && !Array.isArray(dropDefaults)) throw new ToolError("config_invalid", "dropDefaultDeny must be an array");
  for (const drop of dropDefaults ?? [])
    if (!DEFAULT_DENY.includes(drop)) throw new ToolError("config_invalid", `dropDefaultDeny ${JSON.stringify(drop)} is not one of the defaults`);
  const patterns = [...new Set([...DEFAULT_DENY.filter((d) => !(dropDefaults ?? []).includes(d)), ...(deny ?? [])])];
  const compiled = patterns.map((p) => compile(p, "deny pattern"));
  return {
    patterns,
    match(relative) {
      if (relative === "." || relative === "") return undefined;
      const names = relative.split("/");
      for (let end = 1; end <= names.length; end++) {
        const prefix = names.slice(0, end).join("/");
        const name = names[end - 1]!;
        const hit = compiled.find((c) => c.regex.test(c.anyName ? name : prefix));
        if (hit !== undefined) return hit.pattern;
      }
      return undefined;
    },
  };
}

/** Whether a name git reported (root-relative) is off limits: denied, or the gate's protected state. */
export function hiddenPath(rules: DenyRules, realRoot: string, relative: string): boolean {
  return rules.match(relative) !== undefined || isProtectedPath(path.join(realRoot, ...relative.split("/")));
}

/**
 * Whether `file` (absolute) is a hard link planted in the tree to the gate's state: its name says
 * nothing, so whatever reads file contents by name (a search, a check) must ask this as well.
 */
export const isProtectedHardLink = (file: string): Promise<boolean> =>
  lstat(file).then(
    (info) => isHardLinkToProtected(info),
    () => false,
  );

/** The refusal for a denied path; says which pattern, never what is there. */
export function refuseDenied(candidate: string, pattern: string): ToolError {
  const shown = candidate.length > 120 ? `${candidate.slice(0, 120)}…` : candidate;
  return new ToolError("path_escape", `path ${JSON.stringify(shown)} is denied to every repository tool (pattern ${JSON.stringify(pattern)})`, {
    details: { reason: "denied", pattern },
  });
}
