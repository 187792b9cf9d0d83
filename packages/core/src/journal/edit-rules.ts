import { hashCanonical } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import { ApprovalRequestSchema } from "./records.js";
import { tampered } from "./sealed-rows.js";
import type { ApprovalDecision, ApprovalEdit, ApprovalExpectation, ApprovalGrantRecord, ApprovalRequest, IntentInput } from "./types.js";

/**
 * The journal's rules for an approver's edit of a request's input (pure; `createJournal` calls them
 * inside its write transactions, before the first write, so a refusal writes nothing):
 * - a decision names the version it saw (`expect`), required once a request has been edited;
 * - an edit applies only to a call request whose input was recorded whole and may be edited, to the
 *   version it names, and carries the hash of exactly the input it holds;
 * - approvals count for the version they approved (earlier ones stay as history);
 * - a grant of an edited request is consumed only by an intent that runs the edited input and says so,
 *   and an intent that says it runs an edit consumes exactly that request's grant.
 */

export type Grant = Extract<ApprovalDecision, { kind: "grant" }>;

/** The record the journal writes when an edited grant is consumed, found by the original call's binding minus its preview. */
export const EDITED_RUN = "edited-run";

export interface EditedRun {
  /** The outbox key the edited call ran under. */
  readonly key: string;
  readonly requestId: string;
  /** The edited intent's time. */
  readonly at: string;
}

/** The request's current version: 0 as asked, n after the n-th edit. */
export const versionOf = (request: ApprovalRequest): number => request.edit?.version ?? 0;

/** What a decision on the request as it stands names: its current version and that version's preview hash. */
export const currentExpectation = (request: ApprovalRequest): ApprovalExpectation => ({
  version: versionOf(request),
  previewHash: request.edit?.previewHash ?? request.previewHash,
});

/** The approvals that count: those of the request's current version. */
export const currentApprovals = (request: ApprovalRequest): readonly ApprovalGrantRecord[] =>
  (request.approvals ?? []).filter((a) => (a.version ?? 0) === versionOf(request));

/** The id of the edited-run record for a call as asked: its tool, input hash, principal and tenant. */
export const editedRunId = (toolId: string, askedInputHash: string, principal: string, tenant: string): string =>
  hashCanonical([toolId, askedInputHash, principal, tenant]);

const invalid = (message: string) => new ToolError("approval_invalid", message);
const refused = (message: string) => new ToolError("edit_refused", message);

/** Refuse a grant whose view is stale or whose edit the journal cannot take (rules 1–3 of the plan). */
export function refuseEditDecision(id: string, request: ApprovalRequest, decision: Grant): void {
  const { version, previewHash } = currentExpectation(request);
  const inputHash = request.edit?.inputHash ?? request.inputHash;
  const expect = decision.expect;
  const now = request.edit ? `now version ${version} by ${request.edit.by}` : "now version 0, the input as asked";
  if (expect === undefined ? request.edit !== undefined : !(expect.version === version && expect.previewHash === previewHash)) {
    throw invalid(`approval request ${id} changed since you looked (${now}): look again and decide on what it is now`);
  }
  const edit = decision.edit;
  if (edit === undefined) return;
  if (request.kind !== "call") throw refused(`approval request ${id} is not a call: only a call's input can be edited`);
  if (!Array.isArray(request.editable) || request.editable.length === 0) throw refused(`approval request ${id}'s input may not be edited`);
  if (request.input === undefined || request.inputRedacted !== false) {
    throw refused(`approval request ${id} did not record its input whole (it held a secret, or was asked before edits): it cannot be edited`);
  }
  if (edit.by !== decision.approver || edit.via !== decision.via) throw invalid(`an edit of approval request ${id} must be made by the approver who grants it`);
  if (edit.fromInputHash !== inputHash) throw invalid(`approval request ${id} changed since you looked (${now}): the edit starts from another version`);
  // Whether it hashes to `edit.inputHash` is checked on the input as it will be stored (`refuseUnreadable`).
  const hash = hashOf(edit.input);
  if (hash === undefined) throw invalid(`an edit of approval request ${id} carries an input JSON cannot hold`);
  if (hash === inputHash || hash === request.inputHash) throw refused(`an edit of approval request ${id} changes nothing`);
}

/** The edit as the journal stores it: the fields it knows, numbered as the next version. */
export function versionedEdit(request: ApprovalRequest, edit: NonNullable<Grant["edit"]>): ApprovalEdit {
  const { input, inputHash, preview, previewHash, target, changes, fromInputHash, by, via, at } = edit;
  return { version: versionOf(request) + 1, input, inputHash, preview, previewHash, target, changes, fromInputHash, by, via, at };
}

function hashOf(input: unknown): string | undefined {
  try {
    return hashCanonical(input);
  } catch {
    return undefined;
  }
}

/** A request with a new edit must read back as one (the edit's preview and changes are JSON of their shapes). */
export function refuseUnreadable(request: ApprovalRequest): void {
  let text: string | undefined;
  try {
    text = JSON.stringify(request);
  } catch {
    text = undefined;
  }
  const stored = text === undefined ? undefined : ApprovalRequestSchema.safeParse(JSON.parse(text));
  if (!stored?.success) {
    throw invalid(`an edit of approval request ${request.id} is not one the journal can store and read back (its preview or changes are malformed)`);
  }
  // The input as stored (JSON) must hash as approved: what runs is read back from the row.
  if (hashOf(stored.data.edit?.input) !== request.edit?.inputHash) {
    throw invalid(`an edit of approval request ${request.id} carries an input hash that is not its input's`);
  }
}

/**
 * Refuse an intent that does not run what the consumed grant approved: a grant of an edited request
 * runs only the edited input, by an intent naming the request and the input as asked; an intent
 * naming an edit must consume that edited request's grant (`request` undefined: it consumes none).
 */
export function refuseEditedIntent(intent: IntentInput, request: ApprovalRequest | undefined): void {
  const edit = request?.edit;
  const edited = intent.edited;
  if (edit === undefined && edited === undefined) return;
  if (edit === undefined || request === undefined) {
    throw invalid(`intent ${intent.key} says it runs an approver's edit, but consumes no grant of an edited request`);
  }
  if (edited === undefined || intent.inputHash !== edit.inputHash || edited.requestId !== request.id || edited.askedInputHash !== request.inputHash) {
    throw invalid(`the grant of approval request ${request.id} runs only its edited input (version ${edit.version}), named as that request's edit`);
  }
}

/** An edited-run record's value as sealed; anything else under that kind is refused as tampered. */
export function editedRunOf(id: string, value: unknown): EditedRun {
  const { key, requestId, at } = (value ?? {}) as Partial<Record<keyof EditedRun, unknown>>;
  if (typeof key === "string" && typeof requestId === "string" && typeof at === "string") return { key, requestId, at };
  throw tampered(`record:${EDITED_RUN}`, id, "schema", "is not an edited-run record");
}
