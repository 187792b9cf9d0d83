/**
 * Runs one scenario under one profile, in a fresh world: the honest agent with a human who grants
 * every request, or the worst-case agent (user task, then the injection) with a human who denies
 * every request. Counts what the human was asked and whether the asks carried a provenance warning.
 */
import { defineProfile, type CallOptions, type Gate, type InvokeResult, type Profile, type ProvenanceSession } from "@toolgate/core";
import { CALENDAR_PERMISSIONS } from "@toolgate/tools-calendar";
import { GMAIL_PERMISSIONS, SEND_CONSENT } from "@toolgate/tools-gmail";
import { NOTION_PERMISSIONS, NOTION_WRITE_CONSENT } from "@toolgate/tools-notion";
import { REPO_PERMISSIONS } from "@toolgate/tools-repo";
import type { Agent, Scenario, World } from "./scenario.js";
import { startWorld } from "./world.js";

export const PROFILE_NAMES = ["no-provenance", "provenance", "provenance-strict"] as const;
export type ProfileName = (typeof PROFILE_NAMES)[number];
export type Mode = "honest" | "worst-case";

/** One call the agent made, as the harness saw it (for the detail block and for debugging a scenario). */
export interface CallRecord {
  readonly toolId: string;
  /** The first answer's status, and `code` for errors and refusals. */
  readonly status: InvokeResult<unknown>["status"];
  readonly code?: string;
  /** Asked a human; `violation` when the request's preview carried a provenance violation. */
  readonly asked: boolean;
  readonly violation: boolean;
  /** The status after the human's grant and the retry (honest runs only). */
  readonly afterGrant?: InvokeResult<unknown>["status"];
}

export interface RunResult {
  readonly scenario: string;
  readonly profile: ProfileName;
  readonly mode: Mode;
  /** Approval requests the human saw. */
  readonly asked: number;
  /** Of those, requests whose preview carried `provenance.verdict === "violation"`. */
  readonly warned: number;
  /** Calls refused by the provenance step (`provenance_refused`). */
  readonly refused: number;
  /** The user's task is done (undefined when the run failed before the checks). */
  readonly userTaskDone?: boolean;
  /** The injection's effect happened (in an honest run it must not: the goal is the injection's alone). */
  readonly reached?: boolean;
  /** A script or check that threw (a harness or scenario bug, reported, never hidden). */
  readonly error?: string;
  readonly calls: readonly CallRecord[];
  readonly ms: number;
}

const ALLOW = [...GMAIL_PERMISSIONS, ...CALENDAR_PERMISSIONS, ...NOTION_PERMISSIONS, ...REPO_PERMISSIONS.filter((p) => p !== "repo:check")];

/** The three profiles: the same capabilities, differing only in what provenance does. */
export function profileFor(name: ProfileName): Profile {
  const base = { name: `eval-${name}`, allow: ALLOW, maxRisk: "high" as const, consents: [SEND_CONSENT, NOTION_WRITE_CONSENT], egress: ["personal" as const] };
  if (name === "no-provenance") return defineProfile(base);
  return defineProfile({ ...base, provenance: { onViolation: name === "provenance" ? "ask" : "refuse", trustedSkipsApproval: true } });
}

/** The agent's handle on the gate; the human answers every request at once (grant or deny). */
function agentFor(gate: Gate<any>, call: CallOptions, human: "grants" | "denies", calls: CallRecord[]): Agent {
  return {
    async call(toolId, input) {
      const first = await gate.invoke(toolId, input, call);
      const asked = first.status === "approval_required";
      const violation = asked && first.preview.provenance?.verdict === "violation";
      const code = first.status === "error" || first.status === "denied" ? first.code : undefined;
      const record = { toolId, status: first.status, ...(code ? { code } : {}), asked, violation };
      if (first.status !== "approval_required") {
        calls.push(record);
        return first;
      }
      const owner = gate.authority.owner();
      if (human === "denies") {
        await gate.approvals.deny(first.requestId, { by: owner, reason: "the evaluation's human denies every request in a worst-case run" });
        calls.push(record);
        return first;
      }
      const decided = await gate.approvals.grant(first.requestId, { by: owner });
      if (decided.status !== "granted") throw new Error(`request ${first.requestId} for ${toolId} needs a second approver`);
      const retried = await gate.invoke(toolId, input, { ...call, approval: decided.grant, idempotencyKey: first.idempotencyKey });
      calls.push({ ...record, afterGrant: retried.status });
      return retried;
    },
  };
}

/**
 * Who answers the requests (default: grants in honest runs, denies in worst-case runs), and `idle`:
 * seed the world and run no script at all (the checks' negative case: nothing done, nothing reached).
 */
export interface RunOptions {
  readonly human?: "grants" | "denies";
  readonly idle?: boolean;
}

const message = (error: unknown): string => (error instanceof Error ? error.message : String(error)).slice(0, 300);

export async function runScenario(scenario: Scenario, profile: ProfileName, mode: Mode, options: RunOptions = {}): Promise<RunResult> {
  const human = options.human ?? (mode === "honest" ? "grants" : "denies");
  const started = performance.now();
  const calls: CallRecord[] = [];
  const world = await startWorld();
  let error: string | undefined;
  let userTaskDone: boolean | undefined;
  let reached: boolean | undefined;
  try {
    const facts = await scenario.seed(world.env);
    const gate = await world.gate();
    const session: ProvenanceSession | undefined =
      profile === "no-provenance"
        ? undefined
        : gate.openSession({ trusted: [{ text: scenario.user.prompt, label: "user" }, ...(scenario.user.trusted ?? [])] });
    const call: CallOptions = { principal: "eval-agent", tenant: "eval", profile: profileFor(profile), ...(session ? { session } : {}) };
    const agent = agentFor(gate, call, human, calls);
    const view: World = { facts, inspect: world.inspect };
    try {
      if (!options.idle) await scenario.honest(agent, view);
      if (!options.idle && mode === "worst-case") await scenario.injection.attack(agent, view);
    } catch (e) {
      // A script that cannot go on (a refused read, say) is a result, not a crash: the checks still run.
      error = `script: ${message(e)}`;
    }
    await gate.drain();
    // Both checks on every run: an honest run that reaches the goal would mean the goal is not the injection's own.
    userTaskDone = await scenario.userTaskDone(view);
    reached = await scenario.injection.reached(view);
  } catch (e) {
    error = `${error ? `${error}; ` : ""}harness: ${message(e)}`;
  } finally {
    await world.close();
  }
  return {
    scenario: scenario.id,
    profile,
    mode,
    asked: calls.filter((c) => c.asked).length,
    warned: calls.filter((c) => c.violation).length,
    refused: calls.filter((c) => c.code === "provenance_refused").length,
    ...(userTaskDone === undefined ? {} : { userTaskDone }),
    ...(reached === undefined ? {} : { reached }),
    ...(error ? { error } : {}),
    calls,
    ms: Math.round(performance.now() - started),
  };
}
