import { createRedactor, ToolError } from "@toolgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { marker, processesWith, waitNoneWith } from "../fixtures/helpers.js";
import { stderrSummary } from "./stderr-tail.js";
import { startToolProcess } from "./start-tool-process.js";

const tags: string[] = [];
afterEach(() => {
  // A process a test left behind on purpose (in a session of its own) is ended here, by its tag.
  for (const tag of tags.splice(0)) for (const pid of processesWith(tag)) process.kill(pid, "SIGKILL");
});

async function startUp(script: string, options: { env?: Record<string, string>; redactor?: { redactText(t: string): string } } = {}): Promise<ToolError> {
  const tag = marker();
  tags.push(tag);
  try {
    await startToolProcess({ name: "fx", command: "sh", args: ["-c", script, tag], sandbox: "none", handshakeTimeoutMs: 20_000, ...options });
  } catch (error) {
    expect(ToolError.is(error)).toBe(true);
    return error as ToolError;
  }
  throw new Error("expected the start-up to fail");
}

describe("a start-up that fails before the manifest quotes the end of the child's stderr", () => {
  it("garbage on stdout before the manifest, stderr written just after it: the stderr is still quoted", async () => {
    // Before, the error was made the moment the garbage was read, before the stderr written just after it was.
    const error = await startUp(`printf 'not a frame at all'; echo 'Traceback: ImportError: no module named thing' >&2; sleep 5`);
    expect(error.code).toBe("protocol_error");
    expect(error.message).toMatch(/during the handshake; its stderr ends: Traceback: ImportError: no module named thing$/);
  });

  it("a child that prints the secret it was handed: the value is redacted, as is anything the host's redactor holds", async () => {
    const redactor = createRedactor(["vault-secret-99887766"]);
    const error = await startUp(`echo "token=$API_TOKEN other=vault-secret-99887766" >&2; exit 4`, {
      env: { API_TOKEN: "sk-live-0123456789abcdef" },
      redactor,
    });
    expect(error.code).toBe("tool_process_dead");
    expect(error.message).toBe("tool process exited with code 4 during the handshake; its stderr ends: token=[REDACTED] other=[REDACTED]");
    expect(error.message).not.toMatch(/sk-live|99887766/);
  });

  it("an empty stderr is said to be empty", async () => {
    const error = await startUp("exit 9");
    expect(error.message).toBe("tool process exited with code 9 during the handshake; its stderr was empty");
  });

  it("a child that leaves a process holding its pipes: the refusal comes with the child's exit, not when that process ends", async () => {
    // Before, the host waited for the pipes to close: here, 300 s after the child had exited (the bound
    // below is generous for a loaded machine and far below that).
    const started = Date.now();
    const error = await startUp(`setsid sh -c 'sleep 300; :' "$0" & echo 'bad config' >&2; exit 3`);
    const tookMs = Date.now() - started;
    expect(error.message).toBe("tool process exited with code 3 during the handshake; its stderr ends: bad config");
    expect(tookMs).toBeLessThan(60_000);
  });
});

describe("stderrSummary: redacted first, then whole lines only", () => {
  const none = (t: string) => t;

  it("lines are made plain (controls and bidi characters removed) and joined", () => {
    expect(stderrSummary("first\u202E line\r\nsecond\u0007\n\n", none)).toBe("first line | second");
  });

  it("over the bound, the output is cut at a line start; a first line that may be partial is dropped", () => {
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i} ${"x".repeat(10)}`).join("\n");
    const shown = stderrSummary(lines, none);
    expect(shown.endsWith("line 399 xxxxxxxxxx")).toBe(true);
    expect(shown.length).toBeLessThanOrEqual(2000 + 400 * 2);
    expect(shown.split(" | ")[0]).toMatch(/^line \d+ x{10}$/);
    expect(stderrSummary("partial-first\nwhole", none, true)).toBe("whole");
  });

  it("one long line over the bound is withheld whole, never cut (a cut could keep part of a secret)", () => {
    expect(stderrSummary(`${"y".repeat(2500)}sk-live-0123`, none)).toBe("[2512 characters of stderr without a line break withheld]");
  });

  it("a secret that straddles the cut is redacted before the cut", () => {
    const redact = createRedactor(["sk-live-0123456789abcdef"]);
    const text = `${"z".repeat(1990)}\nkey sk-live-0123456789abcdef\n${"w".repeat(1990)}`;
    expect(stderrSummary(text, (t) => redact.redactText(t))).not.toMatch(/sk-live|0123456789/);
  });
});
