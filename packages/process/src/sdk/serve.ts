import { z } from "zod";
import { FrameDecoder, FrameWriter } from "../protocol/codec.js";
import {
  hostMessageSchemas,
  readFast,
  type Classified,
  type HostMessage,
  type InvokeTool,
  type ToolEventBody,
  type ToolMessage,
  type VerificationState,
} from "../protocol/frames.js";

/** What a tool body gets: its cancellation signal and ways to report while it runs. */
export interface ProcessToolContext {
  /** Aborts when the host sends `CancelInvocation` for this call or `ToolShutdown`. */
  readonly signal: AbortSignal;
  readonly callId: string;
  /** The host's id for this invocation (`turn_id`). */
  readonly turnId: string;
  /** True when a human approved the escalation this tool asked for on an identical earlier call. */
  readonly escalationApproved: boolean;
  /** A `ToolEvent { kind: "Status" }`: becomes a progress event at the host. */
  progress(status: string): void;
  /** A `ToolEvent { kind: "OutputChunk" }`. */
  chunk(text: string): void;
  /** A `ToolEvent { kind: "Log" }`. */
  log(level: "debug" | "info" | "warn" | "error", message: string): void;
  /** Stop here and ask for a human's approval (`RequiresEscalation`). */
  escalate(reason: string): never;
}

/** One tool a process serves. `input` is a zod schema; its JSON Schema is what the host sees and validates against. */
export interface ProcessTool<TInput extends z.ZodType = z.ZodType> {
  /** A lower-case word: the host's id is `<process name>.<name>`. */
  readonly name: string;
  readonly description: string;
  readonly input: TInput;
  /** The scope this tool needs; the operator may only narrow it. */
  readonly requiredScope?: string;
  /** Default `NotApplicable`. */
  readonly verified?: VerificationState;
  readonly handler: (input: z.output<TInput>, ctx: ProcessToolContext) => unknown;
}

/** Define a tool with its input type inferred from the schema. */
export function processTool<TInput extends z.ZodType>(tool: ProcessTool<TInput>): ProcessTool<TInput> {
  return tool;
}

export interface ServeToolProcessOptions {
  /** Sent as `tool_process_name`. */
  readonly name: string;
  readonly tools: readonly ProcessTool<any>[];
  /** Default `process.stdin`. */
  readonly input?: NodeJS.ReadableStream;
  /** Default `process.stdout`: frames only. */
  readonly output?: NodeJS.WritableStream;
  /** Default `process.stderr`: logs. */
  readonly errors?: NodeJS.WritableStream;
}

class Escalation extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** One running call. Its AbortController is made only when the body reads `ctx.signal`. */
class RunningCall {
  private controller: AbortController | undefined;
  private reason: Error | undefined;

  get aborted(): boolean {
    return this.reason !== undefined;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: Error): void {
    if (this.reason) return;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

/** The `ToolResult` frame's text, with the output's JSON spliced in as it was stringified (once). */
const resultFrame = (callId: string, verified: VerificationState, output: string): string =>
  `{"type":"ToolResult","call_id":${JSON.stringify(callId)},"verified":${JSON.stringify(verified)},"output":${output}}`;

/**
 * Speak the tool protocol on stdin/stdout until `ToolShutdown` or EOF. Answers `ToolHello` with one
 * `ToolRegister`; runs calls in parallel; validates input with each tool's zod schema (`invalid_input`
 * on failure); answers an unknown tool with `unknown_tool`, a thrown error with `invocation_failed`,
 * a cancelled call with `cancelled`; skips unknown frames. Nothing but frames is written to stdout.
 * Resolves when the host is done with it.
 */
export function serveToolProcess(options: ServeToolProcessOptions): Promise<void> {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const errors = options.errors ?? process.stderr;
  const tools = new Map(options.tools.map((t) => [t.name, t]));
  const running = new Map<string, RunningCall>();
  const decoder = new FrameDecoder();
  // Frames written in one tick (the answers to a burst of calls) leave in one write.
  const writer = new FrameWriter((bytes) => void output.write(bytes));
  const send = (message: ToolMessage): void => writer.send(message);
  const note = (text: string): void => {
    errors.write(`[${options.name}] ${text}\n`);
  };

  const register = (): void => {
    send({
      type: "ToolRegister",
      tool_process_name: options.name,
      tools: options.tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: JSON.parse(JSON.stringify(z.toJSONSchema(t.input, { io: "input", unrepresentable: "any" }))) as Record<string, unknown>,
        required_scope: t.requiredScope ?? null,
      })),
    });
  };

  const run = async (message: InvokeTool): Promise<void> => {
    const callId = message.call_id;
    const tool = tools.get(message.tool_name);
    if (!tool) return send({ type: "ToolError", call_id: callId, code: "unknown_tool", message: `no tool named ${JSON.stringify(message.tool_name)}` });
    if (running.has(callId)) return note(`ignored a second InvokeTool for call ${callId}`);
    const parsed = tool.input.safeParse(message.input);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i: z.core.$ZodIssue) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`);
      return send({ type: "ToolError", call_id: callId, code: "invalid_input", message: issues.join("; ") });
    }
    const state = new RunningCall();
    running.set(callId, state);
    const event = (body: ToolEventBody): void => {
      if (running.get(callId) === state && !state.aborted) send({ type: "ToolEvent", call_id: callId, event: body });
    };
    const ctx: ProcessToolContext = {
      get signal() {
        return state.signal;
      },
      callId,
      turnId: message.turn_id,
      escalationApproved: message.escalation_approved === true,
      progress: (status) => event({ kind: "Status", status: String(status) }),
      chunk: (text) => event({ kind: "OutputChunk", chunk: String(text) }),
      log: (level, text) => event({ kind: "Log", level, message: String(text) }),
      escalate: (reason) => {
        throw new Escalation(String(reason));
      },
    };
    const cancelled: ToolMessage = { type: "ToolError", call_id: callId, code: "cancelled", message: "cancelled" };
    let terminal: ToolMessage | string;
    try {
      const value = await tool.handler(parsed.data, ctx);
      if (state.aborted) terminal = cancelled;
      else {
        const json = JSON.stringify(value ?? null) as string | undefined;
        if (json === undefined) throw new TypeError("the tool's result is not a JSON value");
        terminal = resultFrame(callId, tool.verified ?? "NotApplicable", json);
      }
    } catch (error) {
      if (error instanceof Escalation) terminal = { type: "RequiresEscalation", call_id: callId, reason: error.reason };
      else if (state.aborted) terminal = cancelled;
      else terminal = { type: "ToolError", call_id: callId, code: "invocation_failed", message: error instanceof Error ? error.message : String(error) };
    }
    running.delete(callId);
    try {
      if (typeof terminal === "string") writer.sendJson(terminal);
      else send(terminal);
    } catch (error) {
      // A result over the frame limit (or a message that will not encode) still ends the call.
      send({ type: "ToolError", call_id: callId, code: "invocation_failed", message: `the tool's answer could not be sent: ${(error as Error).message}` });
    }
  };

  return new Promise<void>((resolve) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      for (const call of running.values()) call.abort(new Error("shutdown"));
      input.removeListener("data", onData);
      input.removeListener("end", finish);
      (input as NodeJS.ReadStream).destroy?.();
      resolve();
    };
    /** Act on one host message; true when it ends the session. */
    const dispatch = (message: HostMessage): boolean => {
      switch (message.type) {
        case "ToolHello":
          register();
          return false;
        case "InvokeTool":
          void run(message);
          return false;
        case "CancelInvocation":
          running.get(message.call_id)?.abort(new Error("cancelled"));
          return false;
        case "ToolShutdown":
          finish();
          return true;
      }
    };
    const dispatchRead = (read: Classified<HostMessage>): void => {
      if (read.kind === "message") dispatch(read.message);
      else note(read.kind === "unknown" ? `skipped a frame of unknown type ${read.type}` : read.problem);
    };
    // A frame the fast reading does not accept (unknown, malformed, unusual) gets the full check,
    // loaded on first need; it and every frame after it wait their turn, so order is kept.
    let fullCheck: Promise<typeof import("../protocol/messages.js")> | undefined;
    let queue: Promise<void> | undefined;
    const later = (frame: unknown): void => {
      const previous = queue;
      const next = (async () => {
        await previous;
        if (done) return;
        try {
          dispatchRead((await (fullCheck ??= import("../protocol/messages.js"))).classifyHostMessage(frame));
        } catch (error) {
          note(`could not read a frame: ${(error as Error).message}`);
          finish();
        }
      })();
      queue = next;
      void next.then(() => {
        if (queue === next) queue = undefined;
      });
    };
    const onData = (chunk: Buffer | string): void => {
      let frames: unknown[];
      try {
        frames = decoder.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
      } catch (error) {
        note(`host broke the framing: ${(error as Error).message}`);
        return finish();
      }
      for (const frame of frames) {
        const message = queue ? undefined : readFast<HostMessage>(hostMessageSchemas, frame);
        if (!message) later(frame);
        else if (dispatch(message)) return;
      }
    };
    input.on("data", onData);
    input.on("end", finish);
  });
}
