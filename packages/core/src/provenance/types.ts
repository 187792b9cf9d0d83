/**
 * Provenance as the gate reports it: where each string a model put into a side-effectful call came
 * from, judged against what the session has seen, and what the rules made of it.
 */

/** Where a text the session has seen came from. */
export interface ProvenanceSource {
  /** `trusted`: declared by the host (the user's own words, operator-configured contacts); `output`: returned by a tool. */
  readonly kind: "trusted" | "output";
  /** For a trusted text, what the host called it (e.g. `user`, `contacts`). */
  readonly label?: string;
  /** For an output: the tool that returned it, its family, the invocation and the principal it was returned to. */
  readonly toolId?: string;
  readonly family?: string;
  readonly invocationId?: string;
  readonly principal?: string;
  /** True for an output carrying content someone else wrote (the manifest's `untrustedOutput`). */
  readonly untrusted: boolean;
  /** The manifest's one-line description of the output (e.g. "message from lily.white@…"), when it has one. */
  readonly described?: string;
}

/** How one argument relates to what the session has seen. */
export type ProvenanceLabel = "trusted" | "untrusted" | "new";

/** One string of the call's input and where it came from. */
export interface FieldProvenance {
  /** JSON Pointer into the input (`/to/0`). */
  readonly path: string;
  readonly label: ProvenanceLabel;
  /** Declared by the rules as a destination (must be trusted) or as content (untrusted only to trusted destinations). */
  readonly role?: "destination" | "content";
  /** The sources it was found in (at most a few), untrusted first. */
  readonly sources: readonly ProvenanceSource[];
  /** What was found (`copied`, or the shared addresses, links, codes and identifiers), shortened. */
  readonly found?: readonly string[];
  /** One line a human reads: "recipient taken from the output of gmail.read_message (message from …)". */
  readonly why: string;
}

/**
 * The verdict on a call: `trusted` (every judged value from trusted data: what the user or the
 * operator said, copied), `new` (nothing untrusted, but something no trusted text holds: what the
 * model wrote itself), `untrusted` (untrusted data present, no rule broken), `violation` (a rule
 * broken: asked or refused per the profile). Only `trusted` may skip the manifest's approval.
 */
export type ProvenanceVerdict = "trusted" | "new" | "untrusted" | "violation";

/** What the provenance step decided, as the journal, the preview and the traces show it. */
export interface CallProvenance {
  readonly session: string;
  readonly verdict: ProvenanceVerdict;
  /** What the step did: nothing extra, asked a human the manifest would not have asked, refused, or let run without the approval the manifest asks for. */
  readonly action: "none" | "escalated" | "refused" | "waived";
  /** The rules broken, in words. */
  readonly violations: readonly string[];
  /** Destinations, then strings carrying untrusted data, then new ones (trusted content is left out). */
  readonly fields: readonly FieldProvenance[];
}

/** A manifest's (or profile's) provenance rules for one tool: JSON Pointers into its input; `*` stands for every array item or member. */
export interface ProvenanceRules {
  /** Where the effect goes (recipients, attendees, URLs, ids of what is changed or deleted): must be trusted-derived. */
  readonly destinations?: readonly string[];
  /** What is carried (bodies, titles, descriptions): may carry untrusted data only when every destination is trusted-derived. */
  readonly content?: readonly string[];
  /** A manifest's names a destination may always take, whoever wrote them (`primary`: the user's own calendar). Not in profiles. */
  readonly fixed?: readonly string[];
}
