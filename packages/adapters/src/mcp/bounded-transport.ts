/**
 * What an imported MCP server sends is checked where it enters, before the SDK's client reads it:
 * the SDK validates a result's `structuredContent` against the server's own output schema with a
 * recursive validator, so a check after the SDK comes too late (a result nested 100,000 levels
 * deep overflowed the stack inside the SDK).
 *
 * - A line longer than `maxMessageBytes` (stdio), or one that is not JSON-RPC, breaks the protocol:
 *   the connection is closed, the calls pending on it fail with `protocol_error`, and the next call
 *   starts the server again.
 * - A message that parses but is over the JSON bounds (depth, values, entries, string length; an
 *   iterative scan) never reaches the SDK: a response becomes an error for that one call
 *   ({@link BOUNDS_ERROR_CODE}), anything else is dropped. The connection stays.
 */
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, MessageExtraInfo } from "@modelcontextprotocol/sdk/types.js";
import { jsonBoundsProblem, type JsonBounds } from "@toolgate/core/boundary";
import { LineTooLongError } from "./stdio-transport.js";

/** The JSON-RPC error code the bounded transport answers a call with when its response is over the bounds. */
export const BOUNDS_ERROR_CODE = -32099;

/** Largest JSON-RPC message accepted from an imported server, in bytes; over it the protocol is broken. Default 16 MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Bounds every message from an imported server is checked against; JSON bounds' defaults except where set. */
export const DEFAULT_MCP_BOUNDS: Required<JsonBounds> = { maxDepth: 64, maxNodes: 1_000_000, maxEntries: 100_000, maxStringLength: 16 * 1024 * 1024 };

export class BoundedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  /** Why the protocol broke (the connection is then closed), or undefined while it holds. */
  broken: string | undefined;
  closed = false;

  /**
   * @param breakOnError stdio: any read error means the stream is out of step, so the connection is
   *   closed. HTTP reports failed requests the same way; there only {@link breakProtocol} closes it.
   */
  constructor(
    private readonly inner: Transport,
    private readonly bounds: JsonBounds = DEFAULT_MCP_BOUNDS,
    private readonly breakOnError = true,
  ) {}

  /** The server broke the protocol: remember why and close the connection (the next call opens another). */
  breakProtocol(reason: string): void {
    if (this.closed) return;
    this.broken ??= reason;
    void this.close().catch(() => undefined);
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  start(): Promise<void> {
    this.inner.onmessage = (message, extra) => this.receive(message, extra);
    // The inner transport reports what it could not read (a line over its buffer, not JSON, not
    // JSON-RPC) as an error and drops it: the call waiting for it would hang until its timeout. The
    // stream can no longer be trusted to be in step, so the connection is closed.
    this.inner.onerror = (error) => {
      if (this.closed) return;
      this.onerror?.(error);
      if (!this.breakOnError) return;
      // The inner message is not repeated: a parse error quotes the server's bytes.
      this.breakProtocol(
        error instanceof LineTooLongError
          ? "the server sent a message longer than the limit"
          : "the server sent a line that is not a JSON-RPC message, or its stream failed",
      );
    };
    this.inner.onclose = () => {
      this.closed = true;
      this.onclose?.();
    };
    return this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.inner.close();
  }

  private receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    const problem = jsonBoundsProblem(message, this.bounds);
    if (problem === undefined) {
      this.onmessage?.(message, extra);
      return;
    }
    const id = responseId(message);
    // A request or notification from the server over the bounds is dropped; a response fails its call.
    if (id === undefined) return;
    this.onmessage?.({ jsonrpc: "2.0", id, error: { code: BOUNDS_ERROR_CODE, message: `the server's response has ${problem}` } }, extra);
  }
}

/** The id of a response (a message with a result or an error), read without walking anything else. */
function responseId(message: unknown): string | number | undefined {
  try {
    const m = message as Record<string, unknown>;
    if (!("result" in m) && !("error" in m)) return undefined;
    const id = m["id"];
    return typeof id === "string" || typeof id === "number" ? id : undefined;
  } catch {
    return undefined;
  }
}
