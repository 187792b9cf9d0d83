/**
 * Names of tools and families as an operator types them (`notes.save_note`, `notes.*`,
 * `family:notes`), checked against the composition so a typo is a usage error naming what exists,
 * never a switch or a scope that silently matches nothing.
 */
import { CliFailure, EXIT } from "../output.js";
import type { Runtime } from "../runtime.js";

const MAX_NAMED = 12;

/** What the composition has: family names and tool ids, sorted. */
function known(runtime: Runtime): { families: string[]; tools: string[] } {
  return {
    families: runtime.registry
      .families()
      .map((f) => f.name)
      .sort(),
    tools: [...runtime.registry.ids()].sort(),
  };
}

/** "families: a, b (family:<name> or <name>.*); tools: x, y, … (toolgate inventory lists them all)" */
export function knownNames(runtime: Runtime): string {
  const { families, tools } = known(runtime);
  const some = tools.slice(0, MAX_NAMED).join(", ") + (tools.length > MAX_NAMED ? `, … (${tools.length} in all: toolgate inventory lists them)` : "");
  return `families: ${families.join(", ") || "none"} (family:<name> or <name>.*); tools: ${some || "none"}`;
}

/**
 * A kill-switch target from what the operator typed: a tool id or `tool:<id>` → `tool:<id>`; a
 * family as `family:<name>` or `<name>.*` → `family:<name>`. `extra` are targets accepted though the
 * composition no longer has them (switches already on, so they can be turned off).
 */
export function switchTarget(runtime: Runtime, text: string, extra: readonly string[] = []): string {
  const { families, tools } = known(runtime);
  const family = /^family:(.+)$/.exec(text)?.[1] ?? /^([^.]+)\.\*$/.exec(text)?.[1];
  const target = family !== undefined ? `family:${family}` : `tool:${text.replace(/^tool:/, "")}`;
  const exists = family !== undefined ? families.includes(family) : tools.includes(target.slice(5));
  if (exists || extra.includes(target)) return target;
  throw new CliFailure(`${JSON.stringify(text)} names no tool or family in the composition`, EXIT.usage, knownNames(runtime));
}

/** An operator's `--tools` scope: tool ids or `family.*`, each naming something the composition has. */
export function toolSelectors(runtime: Runtime, list: string): string[] {
  const { families, tools } = known(runtime);
  const selectors = splitList(list);
  for (const selector of selectors) {
    const family = /^([^.]+)\.\*$/.exec(selector)?.[1];
    if (family !== undefined ? families.includes(family) : tools.includes(selector)) continue;
    throw new CliFailure(`--tools: ${JSON.stringify(selector)} names no tool or family (family.*) in the composition`, EXIT.usage, knownNames(runtime));
  }
  return selectors;
}

/** `a, b,c` → ["a", "b", "c"]; an empty entry is a usage error. */
export function splitList(list: string): string[] {
  const items = list.split(",").map((item) => item.trim());
  if (items.some((item) => item === ""))
    throw new CliFailure(`not a comma-separated list: ${JSON.stringify(list)}`, EXIT.usage, "e.g. --tools notes.*,repo.write_file");
  return [...new Set(items)];
}
