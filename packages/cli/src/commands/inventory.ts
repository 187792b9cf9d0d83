import { buildInventory, durationText, type InventoryEntry } from "@toolgate/core/operator";
import { EXIT, table, type Io } from "../output.js";
import type { Runtime } from "../runtime.js";

export async function inventoryCommand(runtime: Runtime, options: { profile?: string; json: boolean }, io: Io): Promise<number> {
  const profiles = options.profile ? [runtime.profile(options.profile)] : runtime.profiles;
  const inventory = buildInventory(runtime.registry, { profiles });
  const tools = options.profile ? inventory.tools.filter((t) => t.reachableBy.includes(options.profile!)) : inventory.tools;
  if (options.json) {
    io.out(JSON.stringify({ ...inventory, tools }, null, 2));
    return EXIT.ok;
  }
  io.out(
    table(
      ["tool", "kind", "action", "effect", "risk", "approval", "tokens", "sovereignty", "scopes", "profiles", "provenance", "limits"],
      tools.map((t) => [
        t.id,
        t.kind,
        t.actionType,
        t.effect,
        t.risk,
        t.approval,
        t.requiredAllowlist.join(" "),
        t.sovereignty,
        t.connector ? t.connector.scopes.join(" ") : "-",
        t.reachableBy.join(" ") || "-",
        provenanceCell(t),
        t.limits
          .map((l) => `${l.profile}: ${l.maxConcurrent !== undefined ? `${l.maxConcurrent} in flight` : `${l.max}/${l.per}/${durationText(l.windowMs ?? 0)}`}`)
          .join("; ") || "-",
      ]),
    ),
  );
  io.out(`\n${tools.length} tool${tools.length === 1 ? "" : "s"}; registry ${inventory.fingerprint.slice(0, 16)}; state ${runtime.stateDir} (protected)`);
  return EXIT.ok;
}

/** `dest /to; content /body; assistant: ask; strict: refuse +dest /cc`: the manifest's rules, then what each reaching profile does with a judgement. */
function provenanceCell(t: InventoryEntry): string {
  const { rules, profiles } = t.provenance;
  const parts: string[] = [];
  if (rules?.destinations?.length) parts.push(`dest ${rules.destinations.join(" ")}`);
  if (rules?.content?.length) parts.push(`content ${rules.content.join(" ")}`);
  for (const p of profiles) {
    const added = [
      ...(p.added.destinations.length > 0 ? [`+dest ${p.added.destinations.join(" ")}`] : []),
      ...(p.added.content.length > 0 ? [`+content ${p.added.content.join(" ")}`] : []),
    ];
    parts.push(`${p.profile}: ${[p.onViolation, ...(p.waivable ? ["trusted skips approval"] : []), ...added].join(", ")}`);
  }
  return parts.join("; ") || "-";
}
