/** Kill switches: a tool or a whole family disabled for every worker sharing the journal, effective on the next call. */
import { ToolError } from "../errors.js";
import { TOOL_ID_PATTERN } from "../manifest.js";
import { changeEvent, type AuthorityContext } from "./context.js";
import type { Authority, KillSwitch, RecordJournal } from "./types.js";

const FAMILY_NAME = /^[a-z][a-z0-9_]*$/;
const MAX_REASON = 500;

interface SwitchRecord extends KillSwitch {
  readonly status: "disabled" | "enabled";
}

function checkTarget(target: unknown): string {
  if (typeof target === "string") {
    if (target.startsWith("tool:") && TOOL_ID_PATTERN.test(target.slice(5))) return target;
    if (target.startsWith("family:") && FAMILY_NAME.test(target.slice(7))) return target;
  }
  throw new ToolError("config_invalid", 'a kill switch target is "tool:<id>" or "family:<name>"');
}

/** The targets that stop a tool: itself and its family (the id's first word). */
export function targetsOf(toolId: string): readonly [string, string] {
  let targets = TARGETS.get(toolId);
  if (targets === undefined) {
    targets = Object.freeze([`tool:${toolId}`, `family:${toolId.slice(0, toolId.indexOf("."))}`] as const);
    // Tool ids come from registries, so few; bounded all the same.
    if (TARGETS.size >= 4096) TARGETS.clear();
    TARGETS.set(toolId, targets);
  }
  return targets;
}
const TARGETS = new Map<string, readonly [string, string]>();

/**
 * The switch that stops this tool now, if any: read from the journal at every call. Two point
 * reads (the tool's, its family's), each seal-checked, so a call costs the same however many
 * switches were ever thrown. A memory journal answers them from what it last verified while
 * nothing else changed the store (see journal/record-index.ts); other stores read them.
 */
export async function switchFor(journal: RecordJournal, toolId: string): Promise<KillSwitch | undefined> {
  const targets = targetsOf(toolId);
  const rows = (await Promise.all([journal.getRecord("switch", targets[0]), journal.getRecord("switch", targets[1])])) as (SwitchRecord | undefined)[];
  const s = rows[0]?.status === "disabled" ? rows[0] : rows[1]?.status === "disabled" ? rows[1] : undefined;
  return s && { target: s.target, reason: s.reason, by: s.by, at: s.at };
}

export function createSwitches(ctx: AuthorityContext): Authority["switches"] {
  const { journal } = ctx;
  return {
    async disable(target, reason, by) {
      const live = await ctx.admin(by);
      checkTarget(target);
      if (typeof reason !== "string" || reason.trim() === "" || reason.length > MAX_REASON) {
        throw new ToolError("config_invalid", `a kill switch needs a reason (1–${MAX_REASON} characters)`);
      }
      const record: SwitchRecord = { target, reason, by: live.id, at: ctx.iso(), status: "disabled" };
      const { result } = await journal.updateRecord("switch", target, () => ({
        value: record,
        event: changeEvent(ctx, "switch.disabled", live, { target, reason }),
        result: Object.freeze({ target, reason, by: live.id, at: record.at }),
      }));
      return result;
    },
    async enable(target, by) {
      const live = await ctx.admin(by);
      checkTarget(target);
      await journal.updateRecord("switch", target, (current) => {
        const now = current as SwitchRecord | undefined;
        if (!now || now.status !== "disabled") throw new ToolError("not_found", `${target} is not disabled`);
        return {
          value: { ...now, status: "enabled", by: live.id, at: ctx.iso() },
          event: changeEvent(ctx, "switch.enabled", live, { target }),
          result: undefined,
        };
      });
    },
    async list() {
      return (await journal.listRecords("switch"))
        .map((r) => r.value as SwitchRecord)
        .filter((s) => s.status === "disabled")
        .map((s) => Object.freeze({ target: s.target, reason: s.reason, by: s.by, at: s.at }));
    },
  };
}
