/**
 * The intent's hash in one pass over the input: the intent's keys are fixed, so its canonical text
 * is written directly in sorted key order, with the input's canonical text (frozen at step 2)
 * spliced in. Equal to `hashCanonical(intent)` byte for byte; where the splice cannot be sure of
 * that (a redacted input, a field of an unexpected type, an approver's edit), the general canonicalizer runs instead.
 */
import { hashCanonical, sha256Hex } from "../canonical-json.js";
import type { IntentInput } from "../journal/types.js";

export type IntentFields = Omit<IntentInput, "intentHash">;

/**
 * `canonicalInput`: the canonical JSON text `fields.input` was parsed from, when the input was not
 * redacted (parsing canonical JSON and writing it again gives the same text); otherwise undefined.
 */
export function intentHashOf(fields: IntentFields, canonicalInput: string | undefined): string {
  const { at, effect, idempotent, inputHash, inputRedacted, invocationId, key, principal, target, tenant, toolId } = fields;
  if (
    canonicalInput === undefined ||
    fields.edited !== undefined ||
    inputRedacted !== false ||
    typeof idempotent !== "boolean" ||
    !(target === undefined || typeof target === "string") ||
    !allStrings(at, effect, inputHash, invocationId, key, principal, tenant, toolId)
  ) {
    return hashCanonical(fields);
  }
  // Keys in UTF-16 order, as canonical JSON sorts them; an undefined target is left out, as canonical JSON leaves it.
  const text =
    `{"at":${JSON.stringify(at)},"effect":${JSON.stringify(effect)},"idempotent":${idempotent}` +
    `,"input":${canonicalInput},"inputHash":${JSON.stringify(inputHash)},"inputRedacted":false` +
    `,"invocationId":${JSON.stringify(invocationId)},"key":${JSON.stringify(key)},"principal":${JSON.stringify(principal)}` +
    `${target === undefined ? "" : `,"target":${JSON.stringify(target)}`},"tenant":${JSON.stringify(tenant)},"toolId":${JSON.stringify(toolId)}}`;
  return sha256Hex(text);
}

function allStrings(...values: unknown[]): boolean {
  for (const value of values) if (typeof value !== "string") return false;
  return true;
}
