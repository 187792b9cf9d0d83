/**
 * A gate session (one agent run): the texts the host declared trusted and every output the gate
 * returned, prepared once for the provenance step's comparisons. A session object is only a
 * handle; its state is held here, out of the caller's reach.
 */
import { randomUUID } from "node:crypto";
import { ToolError } from "../errors.js";
import { prepareText, type PreparedText } from "./derive.js";
import { normalizeStrict } from "./fingerprint.js";
import { SeenIndex } from "./seen-index.js";
import type { ProvenanceSource } from "./types.js";

/** A text the host trusts: the user's own instructions, operator-configured contacts or resources. */
export interface TrustedText {
  readonly text: string;
  /** What it is (`user`, `contacts`): shown to the human beside values taken from it. */
  readonly label?: string;
}

export interface SessionOptions {
  /** Shown in the journal and previews; default a random id. */
  readonly id?: string;
  readonly trusted?: readonly (string | TrustedText)[];
  /**
   * Normalised characters of output kept for comparison; default 4 Mi. Past it the session is
   * saturated: no call of it is judged trusted any more (what it dropped could have carried untrusted data).
   */
  readonly maxChars?: number;
}

/** The caller's handle on a session: pass it as `call.session`. */
export interface ProvenanceSession {
  readonly id: string;
  /** Declare more trusted text (a new instruction from the user). */
  trust(text: string, label?: string): void;
  /** Texts seen so far, characters kept, and whether output was dropped past `maxChars`. */
  stats(): { readonly texts: number; readonly chars: number; readonly saturated: boolean };
}

/** A seen text with where it came from. */
export interface SeenEntry extends PreparedText {
  readonly source: ProvenanceSource;
  /** For trusted text, as destinations are compared (`normalizeStrict`); empty for untrusted text. */
  readonly strict: string;
}

const DEFAULT_MAX_CHARS = 4 * 1024 * 1024;
const MAX_TEXT_CHARS = 1024 * 1024; // one output's text beyond this is kept to this length, and the session marked saturated
const MAX_LABEL = 64;
/** A key that reads as a schema's member name (`to`, `messageId`), not as data (an address, an id). */
export const MEMBER_NAME = /^[A-Za-z_$][A-Za-z0-9_$]{0,31}$/;

export class SessionState {
  /** What the host declared trusted (few, short: looked at whole for every value). */
  readonly host = new SeenIndex<SeenEntry>();
  /** Every output returned in the session. */
  readonly outputs = new SeenIndex<SeenEntry>();
  chars = 0;
  saturated = false;
  #count = 0;
  /** Texts not yet normalised and fingerprinted: that work waits for the next call judged (a session of reads never pays it). */
  #pending: { text: string; source: ProvenanceSource }[] = [];
  constructor(
    readonly id: string,
    readonly maxChars: number,
    /** The gate that opened it: a session is one gate's (another gate's calls refuse it). */
    readonly owner: object,
  ) {}

  add(text: string, source: ProvenanceSource): void {
    if (text.trim() === "") return;
    let kept = text;
    if (kept.length > MAX_TEXT_CHARS) {
      kept = kept.slice(0, MAX_TEXT_CHARS);
      if (source.kind === "output") this.saturated = true;
    }
    // Trusted text is always kept (the host wrote it); output past the budget is dropped and remembered as such.
    if (source.kind === "output" && this.chars + kept.length > this.maxChars) {
      this.saturated = true;
      return;
    }
    this.chars += kept.length;
    this.#pending.push({ text: kept, source });
  }

  /** Prepare what was added since the last call judged; then `host` and `outputs` hold everything seen. */
  prepare(): this {
    for (const { text, source } of this.#pending) {
      const prepared = prepareText({ id: `${this.id}#${++this.#count}`, text });
      const strict = source.untrusted ? "" : normalizeStrict(text);
      (source.kind === "trusted" ? this.host : this.outputs).add({ ...prepared, source, strict });
    }
    this.#pending = [];
    return this;
  }

  get texts(): number {
    return this.host.entries.length + this.outputs.entries.length + this.#pending.length;
  }
}

const states = new WeakMap<object, SessionState>();

/** Open a session: its handle and its state. */
export function openSession(owner: object, options: SessionOptions = {}): ProvenanceSession {
  const id = options.id ?? `ses_${randomUUID()}`;
  if (typeof id !== "string" || !/^[\w.:@-]{1,128}$/.test(id)) {
    throw new ToolError("config_invalid", "a session id is 1–128 letters, digits and . _ : @ -");
  }
  const maxChars = options.maxChars ?? DEFAULT_MAX_CHARS;
  if (!Number.isSafeInteger(maxChars) || maxChars < 0) throw new ToolError("config_invalid", "maxChars must be a whole number of characters");
  const state = new SessionState(id, maxChars, owner);
  const trust = (text: string, label?: string): void => {
    if (typeof text !== "string") throw new ToolError("config_invalid", "trusted text must be a string");
    if (label !== undefined && (typeof label !== "string" || label.length > MAX_LABEL)) {
      throw new ToolError("config_invalid", `a trusted text's label is a string of at most ${MAX_LABEL} characters`);
    }
    state.add(text, { kind: "trusted", untrusted: false, ...(label === undefined ? {} : { label }) });
  };
  for (const t of options.trusted ?? []) {
    if (typeof t === "string") trust(t);
    else trust(t?.text, t?.label);
  }
  const session: ProvenanceSession = Object.freeze({
    id,
    trust,
    stats: () => ({ texts: state.texts, chars: state.chars, saturated: state.saturated }),
  });
  states.set(session, state);
  return session;
}

/** The state behind a handle, or undefined for anything `openSession` did not return. */
export function sessionState(session: unknown): SessionState | undefined {
  return typeof session === "object" && session !== null ? states.get(session) : undefined;
}

/** The strings of a value (numbers as text), one per line: what a model read of it. */
export function textOf(value: unknown, limit = MAX_TEXT_CHARS + 1): string {
  const parts: string[] = [];
  let length = 0;
  const walk = (v: unknown, depth: number): void => {
    if (length >= limit || depth > 64) return;
    if (typeof v === "string") {
      parts.push(v);
      length += v.length + 1;
    } else if (typeof v === "number" || typeof v === "bigint") {
      parts.push(String(v));
      length += 16;
    } else if (Array.isArray(v)) {
      for (const item of v) walk(item, depth + 1);
    } else if (v !== null && typeof v === "object") {
      // Keys too: output keyed by an address or an id carries it as much as a value does (a schema's own member names do not).
      for (const [key, item] of Object.entries(v)) {
        if (!MEMBER_NAME.test(key)) walk(key, depth + 1);
        walk(item, depth + 1);
      }
    }
  };
  walk(value, 0);
  return parts.join("\n");
}
