/** What an operator declares when importing an MCP server, and what the import reports back. */
import type { AnyToolManifest, ApprovalPreview, ApprovalRule, DataClass, Effect, RiskLevel, RuntimeIsolation, ToolFamily, Visibility } from "@toolgate/core";
import type { JsonBounds } from "@toolgate/core/boundary";
import type { z } from "zod";
import type { McpSandboxOption } from "./remote-sandbox.js";

/**
 * What an operator declares about one remote tool. Every field here wins over anything the server
 * says; the server's annotations are recorded as hints and never loosen these.
 */
export interface ImportedToolDescription {
  /** The gate id; default `<name>.<remote tool name in snake_case>`. */
  readonly id?: string;
  /** Tokens the profile must hold, all of them; family-specific (`<name>:verb`). */
  readonly requiredAllowlist: readonly string[];
  readonly effect: Effect;
  readonly risk: RiskLevel;
  /** A predicate receives the validated arguments. */
  readonly approval: ApprovalRule<Record<string, unknown>>;
  /** What a human approves; default: the tool name and its arguments. */
  readonly preview?: (input: Record<string, unknown>) => ApprovalPreview;
  readonly title?: string;
  /** What the model reads; default the server's description (pinned by the definition digest). */
  readonly description?: string;
  /** A stricter input schema than the server's; default the server's JSON Schema, converted. */
  readonly input?: z.ZodType<Record<string, unknown>>;
  /** Default `mcp-call`. */
  readonly actionType?: string;
  readonly visibility?: Visibility;
  /** Default false: a remote `idempotentHint` never makes a call replayable. */
  readonly idempotent?: boolean;
  readonly retryable?: boolean;
  readonly reversible?: boolean;
  readonly timeoutMs?: number;
  readonly provider?: string;
  readonly dataEgress?: boolean;
  readonly dataClass?: DataClass;
  readonly requiredConsent?: readonly string[];
  readonly runtimeIsolation?: RuntimeIsolation;
  readonly target?: (input: Record<string, unknown>) => string;
  /** This tool's output cap in bytes of JSON; default the import's `maxOutputBytes`. */
  readonly maxOutputBytes?: number;
}

export interface ImportMcpServerOptions {
  /** The family name: a lower-case word; tool ids and tokens start with it. */
  readonly name: string;
  /** Launch a stdio server. */
  readonly command?: string;
  readonly args?: readonly string[];
  readonly cwd?: string;
  /** Variables set for a stdio server, exactly as given. */
  readonly env?: Readonly<Record<string, string>>;
  /** Names copied from this process's environment; default `["PATH"]`. Nothing else is passed. */
  readonly inheritEnv?: readonly string[];
  /** What to do with the server's stderr; default `ignore`. */
  readonly stderr?: "ignore" | "inherit";
  /** Or connect to a Streamable HTTP server. */
  readonly url?: string | URL;
  /** Remote tool name → the operator's description. Tools not named here are skipped. */
  readonly tools: Readonly<Record<string, ImportedToolDescription>>;
  /**
   * Digests an operator approved earlier (from `handle.digests`). A tool whose current definition
   * differs is registered but refused until `reapprove`.
   */
  readonly approvedDigests?: Readonly<Record<string, string>>;
  /**
   * When to compare the server's definitions with the approved ones: before `every-call` (default;
   * one extra `tools/list` per call) or only when the server sends `tools/list_changed`.
   */
  readonly driftCheck?: "every-call" | "on-list-changed";
  /**
   * How a stdio server is started; default `"auto"`: in the shared sandbox profile (no
   * capabilities, no network or Unix sockets, a seccomp filter, limits, read-only system paths, its
   * working directory and its own files) where bwrap works, otherwise unsandboxed with a warning.
   */
  readonly sandbox?: McpSandboxOption;
  /**
   * Output over this many bytes of JSON is cut, ending with a truncation marker; default 1 MiB.
   * Text is redacted with the gate's redactor (the call's `ctx.redactText`) before it is cut.
   */
  readonly maxOutputBytes?: number;
  /** A message (stdio) or a request's response (HTTP) from the server longer than this breaks the protocol; default 16 MiB. */
  readonly maxMessageBytes?: number;
  /** JSON bounds every message from the server is checked against before the SDK reads it; default depth 64. */
  readonly bounds?: JsonBounds;
  /**
   * Tools whose server-written text (title, description, input schema) reads like instructions to
   * the model are not registered until accepted here: remote tool name → `descriptionDigest` of the
   * text accepted (reported in `skipped`). A changed text has another digest and is refused again.
   * A tool given the operator's own `description` is not checked: the model never reads the server's.
   */
  readonly acceptedDescriptions?: Readonly<Record<string, string>>;
}

/** A remote tool that was not registered, and why. */
export interface SkippedTool {
  readonly name: string;
  readonly reason: string;
  readonly digest: string;
  /** The digest to accept in `acceptedDescriptions`, for a tool refused for its text. */
  readonly descriptionDigest?: string;
}

export interface DriftReport {
  readonly name: string;
  readonly id: string;
  /** The approved digest (`revoked` when the operator revoked the approval). */
  readonly approved: string;
  /** The server's current digest, or null when the tool disappeared. */
  readonly current: string | null;
}

/** A connected MCP server whose described tools form a family for `createToolRegistry`. */
export interface ImportedMcpServer {
  readonly family: ToolFamily;
  /** Remote tools the operator did not describe: not registered, listed for the inventory. */
  readonly skipped: readonly SkippedTool[];
  /** Tools the operator described that the server does not offer. */
  readonly missing: readonly string[];
  /** Remote hints that claim more danger than the operator declared, and suspicious descriptions. */
  readonly warnings: readonly string[];
  /** Approved definition digest per remote tool name; persist it and pass it back as `approvedDigests`. */
  readonly digests: Readonly<Record<string, string>>;
  /** Compare the server's current definitions with the approved ones. */
  drift(): Promise<readonly DriftReport[]>;
  /**
   * The operator accepts the server's current definitions for `names` (default all registered).
   * Calls are validated against the schema registered at import: re-import to adopt a new schema.
   */
  reapprove(names?: readonly string[]): Promise<void>;
  /**
   * The operator withdraws approval of `names` (default all registered): their calls are refused
   * (`provider_rejected`, before any effect) until `reapprove`, and `digests` says `revoked` for
   * them. An unknown name changes nothing (`config_invalid`).
   */
  revoke(names?: readonly string[]): Promise<void>;
  /**
   * Gate ids of the registered tools not approved now: revoked, or whose definition as last seen
   * (at a call, `drift()`, or the server's `tools/list_changed`) differs from the approved one.
   * `serveMcp({ imported })` leaves these out of tools/list.
   */
  unapproved(): readonly string[];
  /** How the server was started (sandbox) and what the inventory may claim about it. */
  readonly isolation: RuntimeIsolation | undefined;
  close(): Promise<void>;
}

/** The digest of what a model and an operator rely on: name, description, input schema. */
