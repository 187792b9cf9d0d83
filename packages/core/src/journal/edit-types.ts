import type { ApprovalPreview } from "../manifest.js";

/**
 * One member that differs between the input as asked and an approver's edited input: a JSON
 * Pointer (RFC 6901) to an object member. Objects are compared member by member, arrays and
 * scalars whole. `before` absent = the member was absent; `after` absent = the edit removed it.
 */
export interface ApprovalChange {
  readonly path: string;
  readonly before?: unknown;
  readonly after?: unknown;
}

/** The edit an approval request now carries (the latest; earlier versions are in the audit trail). */
export interface ApprovalEdit {
  /** 1, 2, … (version 0 is the input as asked). */
  readonly version: number;
  /** The edited input, exact: it is what runs (an edit holding a registered secret is refused). */
  readonly input: unknown;
  /** SHA-256 of the canonical edited input: what the grant binds and what runs. */
  readonly inputHash: string;
  /** Recomputed from `input`, redacted (plan included). */
  readonly preview: ApprovalPreview;
  readonly previewHash: string;
  /** The manifest's `target` of the edited input. */
  readonly target: string | undefined;
  /** Against the input as asked (not the previous edit); redacted. */
  readonly changes: readonly ApprovalChange[];
  /** The input hash of the version this edit replaced. */
  readonly fromInputHash: string;
  /** The approver who made the edit, and how they were authenticated. */
  readonly by: string;
  readonly via: string;
  readonly at: string;
}

/** What the desk hands the journal with a grant; the journal assigns `version`. */
export type ApprovalEditInput = Omit<ApprovalEdit, "version">;

/** On an intent that runs an approver's edit: which request, and the hash of the input as the caller asked it. */
export interface EditedIntent {
  readonly requestId: string;
  readonly askedInputHash: string;
  readonly changes: readonly ApprovalChange[];
}

/** What a decision says it saw: the request's version and the preview hash shown (a stale view is refused). */
export interface ApprovalExpectation {
  readonly version: number;
  readonly previewHash: string;
}
