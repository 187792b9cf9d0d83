/**
 * `toolgate approvals`: requests waiting for a human, and the owner's decisions on them. A grant
 * is kept only in the journal: the same call retried (by this CLI, another process, an MCP client,
 * any worker sharing the journal) is picked up by its binding and runs once.
 */
import { ToolError, type ApprovalRequest, type ApprovalStatus } from "@toolgate/core";
import { currentApprovals, currentExpectation } from "@toolgate/core/operator";
import { CliFailure, EXIT, parseDuration, printList, type Io } from "../output.js";
import { printable } from "../printable.js";
import type { Runtime } from "../runtime.js";
import { approveWithEdit, parsePreviewHash, renderEditFacts, renderPreview } from "./approvals-edit.js";

const APPROVAL_ID = /^apr_[0-9a-f-]+$/;
const STATUSES: readonly ApprovalStatus[] = ["pending", "granted", "denied", "consumed", "expired"];

/** The approvals that count: those of the request's current version (an edit starts the count again). */
function countingApprovals(r: ApprovalRequest) {
  return r.approvals && currentApprovals(r);
}

/** `1/2` for a two-person request, `-` for one that needs one approver and has none yet. */
function progressOf(r: ApprovalRequest): string {
  const needed = r.approvalsNeeded ?? 1;
  const given = countingApprovals(r)?.length ?? (r.status === "granted" || r.status === "consumed" ? 1 : 0);
  return needed === 1 && given === 0 ? "-" : `${given}/${needed}`;
}

export function renderRequest(r: ApprovalRequest): string {
  const lines = [
    `request  ${r.id} (${r.status})`,
    `tool     ${r.toolId}${r.target ? ` — ${r.target}` : ""}`,
    `for      ${r.principal} @ ${r.tenant}`,
    `asked    ${r.createdAt}, expires ${r.expiresAt}`,
    ...(r.callRef !== undefined ? [`callRef  ${r.callRef}`] : []),
    ...renderPreview(r.preview),
    ...renderEditFacts(r),
  ];
  const needed = r.approvalsNeeded ?? 1;
  if (needed > 1 || (r.approvals?.length ?? 0) > 0)
    lines.push(
      `approvals ${countingApprovals(r)?.length ?? 0} of ${needed}${needed > 1 ? " (two distinct approvers)" : ""}${r.edit ? ` of version ${r.edit.version}` : ""}`,
      ...(r.approvals ?? []).map(
        (a) =>
          `  approved by ${a.by} (${a.via}) at ${a.at}${r.edit ? ` (version ${a.version ?? 0}${(a.version ?? 0) === r.edit.version ? "" : ", no longer counts"})` : ""}`,
      ),
    );
  if (r.decidedBy)
    lines.push(`decided  ${r.status} by ${r.decidedBy}${r.decidedVia ? ` (${r.decidedVia})` : ""} at ${r.decidedAt}${r.reason ? ` (${r.reason})` : ""}`);
  return lines.join("\n");
}

export async function approvalsList(runtime: Runtime, options: { status: string; json: boolean }, io: Io): Promise<number> {
  const status = options.status === "all" ? undefined : (options.status.split(",").map((s) => s.trim()) as ApprovalStatus[]);
  const wrong = status?.find((s) => !STATUSES.includes(s));
  if (wrong !== undefined)
    throw new CliFailure(`--status: ${JSON.stringify(wrong)} is not a status`, EXIT.usage, `use ${STATUSES.join(", ")} (comma-separated) or all`);
  return printList(io, await runtime.gate.approvals.list(status ? { status } : {}), {
    json: options.json,
    empty: `no ${options.status} approval requests`,
    headers: ["request", "status", "approvals", "tool", "principal", "summary"],
    row: (r) => [r.id, r.status, progressOf(r), r.toolId, r.principal, r.preview.summary].map(printable),
  });
}

async function existing(runtime: Runtime, id: string): Promise<ApprovalRequest> {
  if (!APPROVAL_ID.test(id))
    throw new CliFailure(`not an approval request id: ${JSON.stringify(id)}`, EXIT.usage, "ids look like apr_…; toolgate approvals list shows them");
  const request = await runtime.gate.approvals.get(id);
  if (!request) throw new CliFailure(`no approval request ${id}`, EXIT.failed, "toolgate approvals list shows the pending ones");
  return request;
}

export async function approvalsShow(runtime: Runtime, id: string, options: { json: boolean }, io: Io): Promise<number> {
  const request = await existing(runtime, id);
  io.out(options.json ? JSON.stringify(request, null, 2) : printable(renderRequest(request)));
  return EXIT.ok;
}

/** The old `--approver NAME`: a typed name approved nothing; the CLI decides as the owner now. */
function refuseTypedApprover(options: { approver?: string }): void {
  if (options.approver !== undefined)
    throw new CliFailure(
      "--approver is gone: the CLI decides as the owner (recorded as owner), and operators decide signed in to the console",
      EXIT.usage,
      "drop --approver; for another person: toolgate operators add NAME --role approver, then toolgate console",
    );
}

/** A decision the journal refused, said as what to do next. */
function decisionRefused(error: unknown, id: string): unknown {
  if (!ToolError.is(error)) return error;
  if (error.code === "approval_invalid" && /second|different|distinct/i.test(error.message))
    return new CliFailure(
      `${id} needs a second, different approver: the owner has approved it already`,
      EXIT.failed,
      "another operator approves it in the console: toolgate operators add NAME --role approver, then toolgate console",
    );
  if (error.code === "invalid_input")
    return new CliFailure(
      `the edited input is refused: ${error.message} (invalid_input); nothing was approved`,
      EXIT.failed,
      "fix the file to match the tool's input schema (toolgate docs prints it), then run the command again",
    );
  if (error.code === "approval_invalid" && /changed|version|preview/i.test(error.message))
    return new CliFailure(
      `${error.message} (approval_invalid); nothing was approved`,
      EXIT.failed,
      `toolgate approvals show ${id} shows its current version and preview hash; check them, then approve again`,
    );
  if (error.code.startsWith("approval_"))
    return new CliFailure(
      `${error.message} (${error.code})`,
      EXIT.failed,
      `toolgate approvals show ${id} says where it stands; run the call again for a new request`,
    );
  return error;
}

const MAX_TTL_MS = 24 * 60 * 60_000;

export interface ApproveOptions {
  readonly ttl: string;
  readonly approver?: string;
  /** A JSON file (or - for stdin) holding the edited input: approve the call with it instead. */
  readonly input?: string;
  /** The preview hash the owner saw: of the edit (with --input) or of the request's current version. */
  readonly previewHash?: string;
  /** With --input and --preview-hash: the version the printed check started from. */
  readonly fromVersion?: string;
}

/** Approve as it stands: an edited request only with the preview hash of its current version (what the owner saw). */
async function approveAsItStands(runtime: Runtime, request: ApprovalRequest, options: ApproveOptions, ttlMs: number) {
  const id = request.id;
  const seen = parsePreviewHash(options.previewHash, id);
  const current = currentExpectation(request);
  if (request.edit !== undefined && seen === undefined)
    throw new CliFailure(
      `${id} was edited by ${request.edit.by} (version ${current.version}): approving it needs the preview hash you checked`,
      EXIT.usage,
      `toolgate approvals show ${id} shows the edit and its preview hash; then toolgate approvals approve ${id} --preview-hash HASH`,
    );
  const expect = seen === undefined ? {} : { expect: { version: current.version, previewHash: seen } };
  return runtime.gate.approvals.grant(id, { by: runtime.gate.authority.owner(), ttlMs, ...expect }).catch((error: unknown) => {
    throw decisionRefused(error, id);
  });
}

export async function approvalsApprove(runtime: Runtime, id: string, options: ApproveOptions, io: Io): Promise<number> {
  refuseTypedApprover(options);
  const ttlMs = parseDuration(options.ttl);
  if (ttlMs < 1000 || ttlMs > MAX_TTL_MS)
    throw new CliFailure(`--ttl ${options.ttl} is out of range: a grant lasts from 1s to 24h`, EXIT.usage, `e.g. toolgate approvals approve ${id} --ttl 10m`);
  const request = await existing(runtime, id);
  const decided =
    options.input === undefined
      ? await approveAsItStands(runtime, request, options, ttlMs)
      : await approveWithEdit(
          runtime,
          request,
          {
            input: options.input,
            ttlMs,
            ...(options.previewHash === undefined ? {} : { previewHash: options.previewHash }),
            ...(options.fromVersion === undefined ? {} : { fromVersion: options.fromVersion }),
          },
          io,
          (e) => decisionRefused(e, id),
        );
  if (decided === undefined) return EXIT.failed;
  const edited = options.input === undefined ? "" : "the edited call of ";
  if (decided.status === "needs_another") {
    const r = decided.request;
    const given = countingApprovals(r)?.length ?? 1;
    io.out(
      [
        `recorded owner's approval of ${edited}${id}: ${given} of ${r.approvalsNeeded ?? 2}; it needs another, different approver`,
        "another operator approves it in the console: toolgate operators add NAME --role approver, then toolgate console",
      ].join("\n"),
    );
    return EXIT.approval;
  }
  io.out(
    `approved ${edited}${id} (by owner) for ${decided.grant.toolId} until ${decided.grant.expiresAt}; run the same call again: ${edited === "" ? "it runs" : "the edited call runs"} once`,
  );
  return EXIT.ok;
}

export async function approvalsDeny(runtime: Runtime, id: string, options: { reason?: string; approver?: string }, io: Io): Promise<number> {
  refuseTypedApprover(options);
  const reason = options.reason?.trim() ?? "";
  if (reason === "") throw new CliFailure("a denial needs --reason", EXIT.usage, `e.g. toolgate approvals deny ${id} --reason "wrong recipient"`);
  await existing(runtime, id);
  await runtime.gate.approvals.deny(id, { by: runtime.gate.authority.owner(), reason }).catch((error: unknown) => {
    throw decisionRefused(error, id);
  });
  io.out(`denied ${id} (by owner): ${reason}`);
  return EXIT.ok;
}
