/**
 * The client side of MCP's stdio transport, for imported servers: newline-delimited JSON-RPC over
 * the child's stdin and stdout. Unlike the SDK's, a line is gathered as a list of chunks and joined
 * once (the SDK's buffer copies itself on every chunk: 16 MiB took seconds), a line over
 * `maxLineBytes` is refused as soon as it passes the limit, and a line that is not JSON-RPC is
 * reported rather than skipped: either breaks the protocol (see {@link BoundedTransport}).
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

export interface StdioServerLaunch {
  readonly command: string;
  readonly args: readonly string[];
  /** The server's whole environment: nothing else is passed. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly stderr: "ignore" | "inherit";
  readonly maxLineBytes: number;
  /** What the sandbox reads on descriptors 3, 4, … (pipes) before the server starts. */
  readonly descriptors?: readonly Buffer[] | undefined;
  /** Called once when the server has exited (or could not be started); `stopped` when the host ended it. */
  readonly onExit?: (exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null; readonly stopped: boolean }) => void;
}

/** What a line over the limit is reported as. */
export class LineTooLongError extends Error {}

const NEWLINE = 0x0a;

export class StdioClientLineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child: ChildProcess | undefined;
  private parts: Buffer[] = [];
  private pending = 0;
  private stopped = false;
  /** Whether the server sent a line over `maxLineBytes` (the connection was then closed). */
  lineTooLong = false;

  constructor(private readonly launch: StdioServerLaunch) {}

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const descriptors = this.launch.descriptors ?? [];
      const child = spawn(this.launch.command, [...this.launch.args], {
        env: { ...this.launch.env },
        stdio: ["pipe", "pipe", this.launch.stderr, ...descriptors.map(() => "pipe" as const)],
        shell: false,
        ...(this.launch.cwd === undefined ? {} : { cwd: this.launch.cwd }),
      });
      this.child = child;
      descriptors.forEach((content, i) => {
        const pipe = child.stdio[3 + i] as Writable | null;
        pipe?.on("error", () => undefined); // EPIPE when it died first; its exit says why
        pipe?.end(content);
      });
      let exited = false;
      const exit = (code: number | null, signal: NodeJS.Signals | null) => {
        if (exited) return;
        exited = true;
        this.launch.onExit?.({ code, signal, stopped: this.stopped });
      };
      child.once("exit", exit);
      child.once("error", (error) => {
        // A spawn that failed never exits: its run is over all the same.
        if (child.pid === undefined) exit(null, null);
        reject(error);
        this.onerror?.(error);
      });
      child.once("spawn", () => resolve());
      child.once("close", (code, signal) => {
        exit(code, signal);
        this.child = undefined;
        this.onclose?.();
      });
      child.stdin?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("data", (chunk: Buffer) => this.read(chunk));
    });
  }

  private read(chunk: Buffer): void {
    let from = 0;
    while (!this.stopped) {
      const end = chunk.indexOf(NEWLINE, from);
      if (end === -1) break;
      this.parts.push(chunk.subarray(from, end));
      const line = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
      this.parts = [];
      this.pending = 0;
      from = end + 1;
      if (line.length > this.launch.maxLineBytes) return this.fail(new LineTooLongError(`a message longer than ${this.launch.maxLineBytes} bytes`));
      this.deliver(line);
    }
    if (this.stopped || from >= chunk.length) return;
    this.pending += chunk.length - from;
    if (this.pending > this.launch.maxLineBytes) return this.fail(new LineTooLongError(`a message longer than ${this.launch.maxLineBytes} bytes`));
    this.parts.push(chunk.subarray(from));
  }

  private deliver(line: Buffer): void {
    const text = line.toString("utf8").replace(/\r$/, "");
    if (text.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = JSONRPCMessageSchema.parse(JSON.parse(text));
    } catch {
      // Not the parser's message: it quotes the server's bytes.
      this.onerror?.(new Error("a line that is not a JSON-RPC message"));
      return;
    }
    this.onmessage?.(message);
  }

  private fail(error: Error): void {
    if (error instanceof LineTooLongError) this.lineTooLong = true;
    this.parts = [];
    this.pending = 0;
    this.onerror?.(error);
    void this.close(0);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.stopped) return reject(new Error("the server is not running"));
      if (stdin.write(`${JSON.stringify(message)}\n`)) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /** Close stdin; a server that has not exited `graceMs` later is terminated, then killed. */
  async close(graceMs = 1000): Promise<void> {
    this.stopped = true;
    const child = this.child;
    if (!child) return;
    child.stdout?.removeAllListeners("data");
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    const within = (ms: number) => Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);
    child.stdin?.end();
    if (graceMs > 0 && (await within(graceMs))) return;
    child.kill("SIGTERM");
    if (await within(1000)) return;
    child.kill("SIGKILL");
    await within(1000);
  }
}
