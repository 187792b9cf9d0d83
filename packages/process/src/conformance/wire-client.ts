import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { closePipesAfterExit } from "../host/spawn.js";
import { encodeFrame, FrameDecoder } from "../protocol/codec.js";
import { classifyToolMessage, type ToolMessage } from "../protocol/messages.js";

const TERMINAL = new Set(["ToolResult", "ToolError", "RequiresEscalation"]);
/** Bytes of the child's stderr kept (the end). */
const STDERR_KEPT = 16 * 1024;

/** A bare protocol peer for the conformance kit: sends any frame, records every violation it sees. */
export class WireClient {
  readonly child: ChildProcessWithoutNullStreams;
  readonly violations: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly decoder = new FrameDecoder();
  private readonly inbox: ToolMessage[] = [];
  private readonly sent = new Set<string>();
  private readonly finished = new Set<string>();
  /** Calls this client cancelled: a `cancelled` error that crossed their result is late, not a violation (the host drops it too). */
  private readonly cancelled = new Set<string>();
  private readonly wakers = new Set<() => void>();
  private hasExited = false;
  private stderr = Buffer.alloc(0);
  private stderrDropped = false;

  constructor(command: string, args: readonly string[], options: { cwd?: string | undefined; env: Record<string, string> }) {
    this.child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "pipe"], detached: true });
    this.child.on("error", (error) => this.violations.push(`could not start: ${error.message}`));
    this.child.stdin.on("error", () => undefined);
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.stderr = Buffer.concat([this.stderr, chunk]);
      if (this.stderr.length > STDERR_KEPT) {
        this.stderr = this.stderr.subarray(this.stderr.length - STDERR_KEPT);
        this.stderrDropped = true;
      }
    });
    // A process the child left behind may hold its pipes: the run ends with the child, not with that process.
    closePipesAfterExit(this.child);
    this.child.stdout.on("data", (chunk: Buffer) => {
      let frames: unknown[];
      try {
        frames = this.decoder.push(chunk);
      } catch (error) {
        this.violations.push(`stdout is not a clean frame stream: ${(error as Error).message}`);
        this.kill();
        return;
      }
      for (const frame of frames) this.accept(frame);
      this.wakeAll();
    });
    this.exited = new Promise((resolve) => {
      this.child.on("close", (code, signal) => {
        this.hasExited = true;
        this.wakeAll();
        resolve({ code, signal });
      });
    });
  }

  get running(): boolean {
    return !this.hasExited;
  }

  /** The end of what the child wrote to stderr (at most 16 KiB), and whether older output was dropped. */
  stderrTail(): { readonly text: string; readonly truncated: boolean } {
    return { text: this.stderr.toString("utf8"), truncated: this.stderrDropped };
  }

  send(message: Record<string, unknown>): void {
    if (typeof message["call_id"] === "string" && message["type"] === "InvokeTool") this.sent.add(message["call_id"]);
    if (typeof message["call_id"] === "string" && message["type"] === "CancelInvocation") this.cancelled.add(message["call_id"]);
    if (!this.child.stdin.writable) return;
    this.child.stdin.write(encodeFrame(message));
  }

  /** The next message that `match` accepts (others stay queued), or undefined at the deadline or exit. */
  async next(match: (m: ToolMessage) => boolean, timeoutMs: number): Promise<ToolMessage | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.inbox.findIndex(match);
      if (index >= 0) return this.inbox.splice(index, 1)[0];
      const left = deadline - Date.now();
      if (left <= 0 || this.hasExited) return undefined;
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          this.wakers.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.wakers.add(wake);
      });
    }
  }

  /** The terminal frame for `callId` (events before it are dropped). */
  async terminal(callId: string, timeoutMs: number): Promise<ToolMessage | undefined> {
    return this.next((m) => "call_id" in m && m.call_id === callId && TERMINAL.has(m.type), timeoutMs);
  }

  private wakeAll(): void {
    for (const wake of [...this.wakers]) wake();
  }

  kill(): void {
    if (this.hasExited || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, "SIGKILL");
    } catch {
      this.child.kill("SIGKILL");
    }
  }

  private accept(frame: unknown): void {
    const read = classifyToolMessage(frame);
    if (read.kind === "unknown") return;
    if (read.kind === "malformed") {
      this.violations.push(read.problem);
      return;
    }
    const message = read.message;
    if (message.type === "DispatchNotification") return;
    if ("call_id" in message) {
      const crossed = message.type === "ToolError" && message.code === "cancelled" && this.cancelled.has(message.call_id);
      if (crossed && this.finished.has(message.call_id)) return;
      if (!this.sent.has(message.call_id)) this.violations.push(`${message.type} for call_id ${JSON.stringify(message.call_id)}, which was never sent`);
      else if (this.finished.has(message.call_id))
        this.violations.push(`${message.type} for call_id ${JSON.stringify(message.call_id)} after its terminal frame`);
      if (TERMINAL.has(message.type)) this.finished.add(message.call_id);
    }
    this.inbox.push(message);
  }
}
