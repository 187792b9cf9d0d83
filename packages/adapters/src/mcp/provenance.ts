/**
 * One MCP connection is one agent run: the server opens one provenance session for it
 * (`gate.openSession`) and passes it on every call the connection makes. The session comes from the
 * connection, never from a request: nothing a client sends names, picks or replaces it.
 */
import { ToolError, type Gate, type Profile, type ProvenanceSession } from "@toolgate/core";
import type { McpClient } from "@toolgate/core/operator";

/** A text the host vouches for: the user's own instructions, operator-configured contacts or resources. */
export interface McpTrustedText {
  readonly text: string;
  /** What it is (`user`, `contacts`): shown to the human beside values taken from it. */
  readonly label?: string;
}

/** The connection a session is opened for: who its calls run as. */
export interface McpConnection {
  readonly profile: Profile;
  readonly principal: string;
  readonly tenant: string;
  /** The registered client (over HTTP always; over stdio when named). */
  readonly client?: McpClient;
}

/**
 * Provenance for the calls of each connection. Default on, with no trusted text: every output the
 * gate returns on a connection is remembered, and a side-effectful call whose manifest (or the
 * profile) names destinations has them judged; a destination not from trusted text is a
 * violation (asked of a human, or refused per the profile's `provenance.onViolation`). `false`
 * serves calls outside any session (nothing is remembered or judged).
 */
export type McpProvenanceOption =
  | false
  | {
      /** Trusted texts for every connection, or per connection (e.g. the contacts of the client's tenant). */
      readonly trusted?: readonly McpTrustedText[] | ((connection: McpConnection) => readonly McpTrustedText[]);
      /** Characters of output a session keeps (see `SessionOptions.maxChars`); default the gate's (16 MiB). */
      readonly maxChars?: number;
    };

const MEMBERS = new Set(["trusted", "maxChars"]);

/** Checked when the server is configured: a wrong shape is `config_invalid` before any client comes. */
export function checkProvenanceOption(option: unknown): McpProvenanceOption | undefined {
  if (option === undefined || option === false) return option;
  if (option === null || typeof option !== "object" || Array.isArray(option))
    throw new ToolError("config_invalid", "provenance must be false or { trusted?, maxChars? }");
  const unknown = Object.keys(option).filter((k) => !MEMBERS.has(k));
  if (unknown.length > 0) throw new ToolError("config_invalid", `provenance has unknown members ${unknown.join(", ")} (trusted and maxChars only)`);
  const { trusted, maxChars } = option as { trusted?: unknown; maxChars?: unknown };
  if (trusted !== undefined && typeof trusted !== "function") checkTrusted(trusted, "provenance.trusted");
  if (maxChars !== undefined && (typeof maxChars !== "number" || !Number.isSafeInteger(maxChars) || maxChars < 0))
    throw new ToolError("config_invalid", "provenance.maxChars must be a whole number of characters");
  return option as McpProvenanceOption;
}

function checkTrusted(trusted: unknown, where: string): readonly McpTrustedText[] {
  if (!Array.isArray(trusted)) throw new ToolError("config_invalid", `${where} must be a list of { text, label? }`);
  trusted.forEach((t: unknown, i) => {
    const entry = t as { text?: unknown; label?: unknown } | null;
    if (
      entry === null ||
      typeof entry !== "object" ||
      typeof entry.text !== "string" ||
      (entry.label !== undefined && (typeof entry.label !== "string" || entry.label.length > 64))
    )
      throw new ToolError("config_invalid", `${where}[${i}] must be { text: string, label?: string of at most 64 characters }`);
  });
  return trusted as readonly McpTrustedText[];
}

/** The session for one connection, or none when provenance is off. */
export function connectionSession(gate: Gate, option: McpProvenanceOption | undefined, connection: McpConnection): ProvenanceSession | undefined {
  const checked = checkProvenanceOption(option);
  if (checked === false) return undefined;
  const given = checked?.trusted;
  const trusted = typeof given === "function" ? checkTrusted(given(connection), "provenance.trusted(connection)") : (given ?? []);
  return gate.openSession({
    trusted: trusted.map((t) => (t.label === undefined ? { text: t.text } : { text: t.text, label: t.label })),
    ...(checked?.maxChars === undefined ? {} : { maxChars: checked.maxChars }),
  });
}
