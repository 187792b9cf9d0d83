import { existsSync } from "node:fs";
import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ApprovalGrant, ApprovalRequest, ApprovalStatus } from "@toolgate/core";
import { CliFailure, EXIT, parseDuration, table, type Io } from "../output.js";
import type { Runtime } from "../runtime.js";

/** Where approved grants wait: `grants/` in the state directory (protected, mode 0700). */
export const grantsDir = (runtime: Runtime): string => join(runtime.stateDir, "grants");

/**
 * Grants approved on this machine wait in the state directory's `grants/` (mode 0600) until the
 * same call is made again; the call picks its grant up by request id, so the human approves, the
 * caller re-runs. No filesystem tool can read or plant one there: the state directory is protected.
 */
export function grantPath(runtime: Runtime, requestId: string): string {
  if (!/^apr_[0-9a-f-]+$/.test(requestId)) throw new CliFailure(`not an approval request id: ${requestId}`, EXIT.usage);
  return join(grantsDir(runtime), `${requestId}.json`);
}

interface StoredGrant {
  readonly grant: ApprovalGrant;
  readonly toolId: string;
  readonly inputHash: string;
  readonly principal: string;
  readonly tenant: string;
}

/**
 * The grant a human approved for exactly this call (tool, input hash, principal, tenant), if one
 * waits; it is removed as it is taken, so it is offered once.
 */
export async function takeGrant(runtime: Runtime, call: Omit<StoredGrant, "grant">): Promise<ApprovalGrant | undefined> {
  const dir = grantsDir(runtime);
  if (!existsSync(dir)) return undefined;
  for (const name of await readdir(dir)) {
    if (!name.endsWith(".json")) continue;
    const path = join(dir, name);
    const stored = JSON.parse(await readFile(path, "utf8")) as StoredGrant;
    if (Date.parse(stored.grant.expiresAt) <= Date.now()) {
      await rm(path, { force: true });
      continue;
    }
    if (stored.toolId === call.toolId && stored.inputHash === call.inputHash && stored.principal === call.principal && stored.tenant === call.tenant) {
      await rm(path, { force: true });
      return stored.grant;
    }
  }
  return undefined;
}

export function renderRequest(r: ApprovalRequest): string {
  const lines = [
    `request  ${r.id} (${r.status})`,
    `tool     ${r.toolId}${r.target ? ` — ${r.target}` : ""}`,
    `for      ${r.principal} @ ${r.tenant}`,
    `asked    ${r.createdAt}, expires ${r.expiresAt}`,
    `summary  ${r.preview.summary}`,
  ];
  if (r.preview.details) lines.push(`details  ${JSON.stringify(r.preview.details, null, 2).replace(/\n/g, "\n         ")}`);
  if (r.preview.body !== undefined) lines.push("body", ...r.preview.body.split("\n").map((l) => `  | ${l}`));
  if (r.decidedBy) lines.push(`decided  ${r.status} by ${r.decidedBy} at ${r.decidedAt}${r.reason ? ` (${r.reason})` : ""}`);
  return lines.join("\n");
}

export async function approvalsList(runtime: Runtime, options: { status: string; json: boolean }, io: Io): Promise<number> {
  const status = options.status === "all" ? undefined : (options.status.split(",") as ApprovalStatus[]);
  const requests = await runtime.gate.approvals.list(status ? { status } : {});
  if (options.json) io.out(JSON.stringify(requests, null, 2));
  else if (requests.length === 0) io.out(`no ${options.status} approval requests`);
  else
    io.out(
      table(
        ["request", "status", "tool", "principal", "summary"],
        requests.map((r) => [r.id, r.status, r.toolId, r.principal, r.preview.summary]),
      ),
    );
  return EXIT.ok;
}

export async function approvalsShow(runtime: Runtime, id: string, options: { json: boolean }, io: Io): Promise<number> {
  const request = await runtime.gate.approvals.get(id);
  if (!request) throw new CliFailure(`no approval request ${id}`, EXIT.failed, "toolgate approvals list shows the pending ones");
  io.out(options.json ? JSON.stringify(request, null, 2) : renderRequest(request));
  return EXIT.ok;
}

export async function approvalsApprove(runtime: Runtime, id: string, options: { approver: string; ttl: string }, io: Io): Promise<number> {
  const path = grantPath(runtime, id);
  const request = await runtime.gate.approvals.get(id);
  if (!request) throw new CliFailure(`no approval request ${id}`, EXIT.failed, "toolgate approvals list shows the pending ones");
  const grant = await runtime.gate.approvals.grant(id, { approver: options.approver, ttlMs: parseDuration(options.ttl) });
  const stored: StoredGrant = { grant, toolId: request.toolId, inputHash: request.inputHash, principal: request.principal, tenant: request.tenant };
  await mkdir(grantsDir(runtime), { recursive: true, mode: 0o700 });
  await writeFile(path, JSON.stringify(stored), { mode: 0o600 });
  io.out(`approved ${id} for ${grant.toolId} until ${grant.expiresAt}; run the same call again to use it (once)`);
  return EXIT.ok;
}

export async function approvalsDeny(runtime: Runtime, id: string, options: { approver: string; reason: string }, io: Io): Promise<number> {
  await runtime.gate.approvals.deny(id, { approver: options.approver, reason: options.reason });
  io.out(`denied ${id}`);
  return EXIT.ok;
}
