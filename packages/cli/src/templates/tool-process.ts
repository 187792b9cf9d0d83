import { readFileSync } from "node:fs";

/** This CLI's own package.json: src/templates/ and dist/templates/ both sit two levels below it. */
const cliPackage = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

/**
 * The versions a scaffold pins: the release of this CLI and of what it was published with, so that a
 * scaffold installs exactly the packages that wrote it (never a newer CLI whose checks it was not written for).
 */
export const scaffoldVersions = {
  cli: `${cliPackage.name}@${cliPackage.version}`,
  dependencies: { "@toolgate/process": cliPackage.dependencies["@toolgate/process"] ?? cliPackage.version, zod: cliPackage.dependencies["zod"] ?? "4" },
  devDependencies: { [cliPackage.name]: cliPackage.version, typescript: cliPackage.peerDependencies["typescript"] ?? "5", "@types/node": "20.19.43" },
};

/**
 * The conformance command a Python tool's author runs. Through npx with the package named (never a bare
 * `npx toolgate`, which would fetch whatever unrelated package owns that name), it works wherever the CLI is
 * installed locally and otherwise fetches this same release.
 */
export const pythonTestCommand = (args: string): string => `npx -p ${scaffoldVersions.cli} toolgate tool test ${args}-- python3 tool.py`;

/** Files of a new Python tool process (standard library only) and its conformance test. */
export function pythonTemplate(name: string): Record<string, string> {
  return {
    "tool.py": `#!/usr/bin/env python3
"""${name}: a tool process (protocol "0.1"), standard library only.

Frames are a 4-byte big-endian length, then UTF-8 JSON tagged by "type". stdout carries frames
only; write anything for a human to stderr.
"""

import json
import struct
import sys
import threading

PROTOCOL_VERSION = "0.1"
_lock = threading.Lock()  # guards _running
_write_lock = threading.Lock()


def send(message):
    body = json.dumps(message).encode("utf-8")
    with _write_lock:
        sys.stdout.buffer.write(struct.pack(">I", len(body)) + body)
        sys.stdout.buffer.flush()


def read_frame():
    header = sys.stdin.buffer.read(4)
    if len(header) < 4:
        return None
    (length,) = struct.unpack(">I", header)
    if length > 16 * 1024 * 1024:
        raise ValueError("frame too large")
    body = sys.stdin.buffer.read(length)
    if len(body) < length:
        return None
    return json.loads(body.decode("utf-8"))


TOOLS = [
    {
        "name": "echo",
        "description": "Return the text it is given.",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 10000}},
            "required": ["text"],
            "additionalProperties": False,
        },
        "required_scope": "text:read",
    }
]


_running = {}  # call_id -> "running" or "cancelled"


def finish(call_id, message):
    """Send a call's one terminal frame, unless it was already cancelled."""
    with _lock:
        state = _running.pop(call_id, None)
    if state == "running":
        send(message)


def invoke(frame):
    call_id = frame["call_id"]
    if frame.get("tool_name") != "echo":
        finish(call_id, {"type": "ToolError", "call_id": call_id, "code": "unknown_tool", "message": "no such tool"})
        return
    arguments = frame.get("input")
    text = arguments.get("text") if isinstance(arguments, dict) else None
    if not isinstance(text, str):
        finish(call_id, {"type": "ToolError", "call_id": call_id, "code": "invalid_input", "message": "text must be a string"})
        return
    finish(call_id, {"type": "ToolResult", "call_id": call_id, "verified": "NotApplicable", "output": {"text": text}})


def cancel(call_id):
    with _lock:
        if _running.get(call_id) != "running":
            return  # finished already: nothing may follow its terminal frame
        _running[call_id] = "cancelled"
    send({"type": "ToolError", "call_id": call_id, "code": "cancelled", "message": "cancelled"})


def main():
    while True:
        frame = read_frame()
        if frame is None:
            return
        kind = frame.get("type")
        if kind == "ToolHello":
            send({"type": "ToolRegister", "tool_process_name": "${name}", "tools": TOOLS})
        elif kind == "InvokeTool":
            with _lock:
                _running[frame["call_id"]] = "running"
            threading.Thread(target=invoke, args=(frame,), daemon=True).start()
        elif kind == "CancelInvocation":
            cancel(frame.get("call_id"))
        elif kind == "ToolShutdown":
            return
        # unknown frame types are skipped


if __name__ == "__main__":
    main()
`,
    "README.md": `# ${name}

A tool process for Toolgate, in Python with the standard library only.

Check it against the protocol:

    ${pythonTestCommand(`--input echo='{"text":"hi"}' `)}

Run it under the host with \`startToolProcess({ name: "${name}", command: "python3", args: ["tool.py"] })\`.
`,
  };
}

/** Files of a new TypeScript tool process on the SDK, and its conformance test. */
export function typescriptTemplate(name: string): Record<string, string> {
  return {
    "package.json": `${JSON.stringify(
      {
        name,
        private: true,
        type: "module",
        scripts: {
          build: "tsc -p tsconfig.json",
          test: `npm run build && toolgate tool test --input echo='{"text":"hi"}' -- node dist/tool.js`,
        },
        dependencies: scaffoldVersions.dependencies,
        devDependencies: scaffoldVersions.devDependencies,
      },
      null,
      2,
    )}\n`,
    "tsconfig.json": `${JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, outDir: "dist", rootDir: "src", skipLibCheck: true } }, null, 2)}\n`,
    "src/tool.ts": `import { processTool, serveToolProcess } from "@toolgate/process/sdk";
import { z } from "zod";

const echo = processTool({
  name: "echo",
  description: "Return the text it is given.",
  input: z.object({ text: z.string().max(10_000) }),
  requiredScope: "text:read",
  handler: ({ text }) => ({ text }),
});

await serveToolProcess({ name: "${name}", tools: [echo] });
`,
    "README.md": `# ${name}

A tool process for Toolgate, in TypeScript on \`@toolgate/process/sdk\`.

    npm install && npm test    # builds, then runs the protocol conformance checks
`,
  };
}
