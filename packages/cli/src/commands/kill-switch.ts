/**
 * `toolgate kill-switch`: stop a tool or a whole family for every worker sharing the journal, from
 * the next call (a typed `tool_disabled` refusal, journaled), and turn it back on. The CLI acts as
 * the owner.
 */
import { ToolError } from "@toolgate/core";
import { CliFailure, EXIT, printList, type Io } from "../output.js";
import { printable } from "../printable.js";
import type { Runtime } from "../runtime.js";
import { switchTarget } from "./targets.js";

/** `tool:notes.save_note` → `notes.save_note`; `family:notes` → `notes.*` (how the operator typed it). */
const typed = (target: string): string => (target.startsWith("family:") ? `${target.slice(7)}.*` : target.replace(/^tool:/, ""));

export async function killSwitchOn(runtime: Runtime, text: string, options: { reason?: string }, io: Io): Promise<number> {
  const target = switchTarget(runtime, text);
  const reason = options.reason?.trim() ?? "";
  if (reason === "")
    throw new CliFailure("a kill switch needs --reason", EXIT.usage, `e.g. toolgate kill-switch on ${text} --reason "sends to the wrong list"`);
  const authority = runtime.gate.authority;
  const set = await authority.switches.disable(target, reason, authority.owner()).catch((error: unknown) => {
    throw ToolError.is(error, "config_invalid") ? new CliFailure(error.message, EXIT.usage, 'a short reason, e.g. --reason "incident 7"') : error;
  });
  io.out(
    [
      `kill switch on: ${set.target} (${set.reason}), by ${set.by} at ${set.at}`,
      `every call to it is refused with tool_disabled from the next call, on every worker sharing this journal (${runtime.journal.kind})`,
      `undo: toolgate kill-switch off ${typed(set.target)}`,
    ].join("\n"),
  );
  return EXIT.ok;
}

export async function killSwitchOff(runtime: Runtime, text: string, io: Io): Promise<number> {
  const authority = runtime.gate.authority;
  const on = (await authority.switches.list()).map((s) => s.target);
  // A switch on a tool the composition no longer has can still be turned off.
  const target = switchTarget(runtime, text, on);
  if (!on.includes(target))
    throw new CliFailure(
      `no kill switch is on for ${target}`,
      EXIT.failed,
      on.length === 0 ? "none is on at all" : "toolgate kill-switch list shows the ones that are on",
    );
  await authority.switches.enable(target, authority.owner());
  io.out(`kill switch off: ${target} runs again from the next call`);
  return EXIT.ok;
}

export async function killSwitchList(runtime: Runtime, options: { json: boolean }, io: Io): Promise<number> {
  return printList(io, await runtime.gate.authority.switches.list(), {
    json: options.json,
    empty: "no kill switch is on",
    headers: ["target", "reason", "by", "at"],
    row: (s) => [s.target, s.reason, s.by, s.at].map(printable),
  });
}
