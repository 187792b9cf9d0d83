/**
 * What the caller of an edited call is told: the call ran with an approver's edit of its input, not
 * the input it sent. The model reads a line of the gate's own, then the changes fenced as data (the
 * model wrote each `before`, a person typed each `after`), then the result's usual content.
 */
import { canonicalJson } from "../canonical-json.js";
import type { ApprovalChange } from "../journal/types.js";
import { fenceUntrusted, scanForInjection } from "../untrusted.js";
import type { OkResult } from "./results.js";

type EditedResult = NonNullable<OkResult<unknown>["edited"]>;

/** A value in the model's copy of the changes is cut past this many characters (whole in `edited.changes`). */
export const MAX_NOTICE_VALUE_CHARS = 2000;

/** `content` for the model, with the notice in front. */
export function withEditNotice(toolId: string, edited: EditedResult, content: string): string {
  const line =
    `An approver changed the input of ${toolId} before it ran (request ${edited.requestId}): ` +
    "it ran with the changed input below, not the input you sent. Do not send the original again.";
  const shown = edited.changes.map(cutChange);
  const fenced = fenceUntrusted(toolId, canonicalJson(shown), scanForInjection(shown), "edit").text;
  return `${line}\n${fenced}\n\n${content}`;
}

function cutChange(change: ApprovalChange): ApprovalChange {
  return {
    path: cut(change.path) as string,
    ...("before" in change ? { before: cut(change.before) } : {}),
    ...("after" in change ? { after: cut(change.after) } : {}),
  };
}

/** A long string is cut; any other value whose JSON is long becomes its JSON text, cut. */
function cut(value: unknown): unknown {
  const text = typeof value === "string" ? value : canonicalJson(value ?? null);
  if (text.length <= MAX_NOTICE_VALUE_CHARS) return value;
  return `${text.slice(0, MAX_NOTICE_VALUE_CHARS)}…(cut)`;
}
