import { SHARED_BOUNDARY_TOKENS, ToolError } from "@toolgate/core";

/**
 * How a tool's effective scope becomes permission tokens. A record maps a scope to its tokens; a
 * function computes them (it gets `null` for a tool that declares no scope). Every token must be
 * `<process name>:<verb>` in core's `area:verb` shape, or a shared boundary token, as core
 * requires of every family.
 */
export type ScopeTokenMapping = Readonly<Record<string, readonly string[]>> | ((scope: string | null, toolName: string) => readonly string[]);

/**
 * Scopes are narrowed by adding segments: `fs` ⊇ `fs:read` ⊇ `fs:read:docs` (separators `:`, `/`
 * or `.`). `null` (a tool that declares no scope) is the widest: any scope is within it.
 */
export function scopeWithin(candidate: string | null, ceiling: string | null): boolean {
  if (ceiling === null) return true;
  if (candidate === null) return false;
  if (candidate === ceiling) return true;
  return candidate.startsWith(ceiling) && ":/.".includes(candidate.charAt(ceiling.length));
}

/** Core's shape for a permission token: one `area:verb` pair of lower-case words. */
export const TOKEN_PATTERN = /^[a-z][a-z0-9_-]*:[a-z][a-z0-9_-]*$/;

/**
 * The default mapping: the scope string becomes the token's verb, under the process name as its
 * area, so core's rules hold (`area:verb`, family-specific). Lower-cased; the scope separators
 * `:`, `/` and `.` become `-`; any other character outside `[a-z0-9_-]` becomes `_`; a leading
 * non-letter gets an `s` prefix. So `fs:read` declared by process `files` needs `files:fs-read`,
 * and `Mail/Send` needs `files:mail-send`. A tool without a scope needs `<name>:call`.
 */
export function defaultScopeToken(processName: string, scope: string | null): string {
  if (scope === null || scope.trim() === "") return `${processName}:call`;
  const verb = scope
    .toLowerCase()
    .replace(/[:/.]/g, "-")
    .replace(/[^a-z0-9_-]/g, "_");
  return `${processName}:${/^[a-z]/.test(verb) ? verb : `s${verb}`}`;
}

/** Tokens for one tool, checked against core's family rule so a bad mapping fails at start-up, naming the tool. */
export function tokensFor(processName: string, toolName: string, scope: string | null, mapping: ScopeTokenMapping | undefined): string[] {
  let tokens: readonly string[];
  if (mapping === undefined) tokens = [defaultScopeToken(processName, scope)];
  else if (typeof mapping === "function") tokens = mapping(scope, toolName);
  else {
    const key = scope ?? "";
    const mapped = Object.hasOwn(mapping, key) ? mapping[key] : undefined;
    if (!mapped) throw new ToolError("config_invalid", `scopeTokens has no entry for scope ${JSON.stringify(scope)} of tool ${toolName}`);
    tokens = mapped;
  }
  if (!Array.isArray(tokens) || tokens.length === 0) {
    throw new ToolError("config_invalid", `scopeTokens gave tool ${toolName} no tokens: every process tool needs at least one`);
  }
  for (const token of tokens) {
    const shared = (SHARED_BOUNDARY_TOKENS as readonly string[]).includes(token);
    if (typeof token !== "string" || !TOKEN_PATTERN.test(token) || (!shared && !token.startsWith(`${processName}:`))) {
      throw new ToolError(
        "config_invalid",
        `token ${JSON.stringify(token)} for tool ${toolName} must be "${processName}:<verb>" (${TOKEN_PATTERN}) or a shared boundary token`,
      );
    }
  }
  return [...new Set(tokens)];
}
