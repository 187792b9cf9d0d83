#!/usr/bin/env python3
"""A tool process in plain Python (standard library only).

It speaks the tool protocol, version "0.1", on stdin/stdout: each frame is a 4-byte big-endian
length, then that many bytes of UTF-8 JSON tagged by "type". stdout carries frames only; anything
for a human goes to stderr.

Tools:
  word_count      counts words, lines and characters in a text
  convert_length  converts a length between metric and imperial units
  slow_count      counts up slowly, reporting progress, and stops on CancelInvocation
"""

import json
import struct
import sys
import threading
import time

PROTOCOL_VERSION = "0.1"
MAX_FRAME_BYTES = 16 * 1024 * 1024

_write_lock = threading.Lock()
_cancelled = {}  # call_id -> threading.Event
_cancelled_lock = threading.Lock()


def log(message):
    print(f"[textstats] {message}", file=sys.stderr, flush=True)


def send(message):
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    with _write_lock:
        sys.stdout.buffer.write(struct.pack(">I", len(body)) + body)
        sys.stdout.buffer.flush()


def read_exact(stream, n):
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_frame(stream):
    header = read_exact(stream, 4)
    if header is None:
        return None
    (length,) = struct.unpack(">I", header)
    if length > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {length} bytes is over the limit")
    body = read_exact(stream, length)
    if body is None:
        raise ValueError("stream ended inside a frame")
    return json.loads(body.decode("utf-8"))


TOOLS = [
    {
        "name": "word_count",
        "description": "Count the words, lines and characters of a text. Reads nothing else.",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 100000}},
            "required": ["text"],
            "additionalProperties": False,
        },
        "required_scope": "text:read",
    },
    {
        "name": "convert_length",
        "description": "Convert a length between units (m, km, cm, mm, in, ft, yd, mi).",
        "input_schema": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "from": {"type": "string", "enum": ["m", "km", "cm", "mm", "in", "ft", "yd", "mi"]},
                "to": {"type": "string", "enum": ["m", "km", "cm", "mm", "in", "ft", "yd", "mi"]},
            },
            "required": ["value", "from", "to"],
            "additionalProperties": False,
        },
        "required_scope": "units:convert",
    },
    {
        "name": "slow_count",
        "description": "Count from 1 to n, one step every 50 ms, reporting each step. Can be cancelled.",
        "input_schema": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 10000}},
            "required": ["n"],
            "additionalProperties": False,
        },
        "required_scope": "text:read",
    },
]

METRES = {"m": 1.0, "km": 1000.0, "cm": 0.01, "mm": 0.001, "in": 0.0254, "ft": 0.3048, "yd": 0.9144, "mi": 1609.344}


class BadInput(Exception):
    pass


def check_input(tool, data):
    if not isinstance(data, dict):
        raise BadInput("input must be an object")
    schema = tool["input_schema"]
    for key in schema["required"]:
        if key not in data:
            raise BadInput(f"missing {key}")
    for key in data:
        if key not in schema["properties"]:
            raise BadInput(f"unexpected {key}")


def word_count(data, call_id, cancelled):
    text = data["text"]
    if not isinstance(text, str):
        raise BadInput("text must be a string")
    return {"words": len(text.split()), "lines": len(text.splitlines()), "characters": len(text)}


def convert_length(data, call_id, cancelled):
    value = data["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput("value must be a number")
    if data["from"] not in METRES or data["to"] not in METRES:
        raise BadInput("unknown unit")
    return {"value": value * METRES[data["from"]] / METRES[data["to"]], "unit": data["to"]}


def slow_count(data, call_id, cancelled):
    n = data["n"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise BadInput("n must be a positive integer")
    for i in range(1, n + 1):
        if cancelled.is_set():
            return None
        send({"type": "ToolEvent", "call_id": call_id, "event": {"kind": "Status", "status": f"counted {i} of {n}"}})
        time.sleep(0.05)
    return {"counted": n}


HANDLERS = {"word_count": word_count, "convert_length": convert_length, "slow_count": slow_count}


def run_call(message):
    call_id = message["call_id"]
    name = message.get("tool_name")
    tool = next((t for t in TOOLS if t["name"] == name), None)
    if tool is None:
        send({"type": "ToolError", "call_id": call_id, "code": "unknown_tool", "message": f"no tool named {name!r}"})
        return
    cancelled = threading.Event()
    with _cancelled_lock:
        _cancelled[call_id] = cancelled
    try:
        check_input(tool, message.get("input"))
        output = HANDLERS[name](message["input"], call_id, cancelled)
        if cancelled.is_set():
            send({"type": "ToolError", "call_id": call_id, "code": "cancelled", "message": "cancelled by the host"})
        else:
            send({"type": "ToolResult", "call_id": call_id, "verified": "NotApplicable", "output": output})
    except BadInput as error:
        send({"type": "ToolError", "call_id": call_id, "code": "invalid_input", "message": str(error)})
    except Exception as error:  # a tool never crashes on one bad call
        send({"type": "ToolError", "call_id": call_id, "code": "invocation_failed", "message": str(error)})
    finally:
        with _cancelled_lock:
            _cancelled.pop(call_id, None)


def main():
    stdin = sys.stdin.buffer
    workers = []
    while True:
        try:
            message = read_frame(stdin)
        except ValueError as error:
            log(f"bad frame from host: {error}")
            break
        if message is None:
            break
        kind = message.get("type")
        if kind == "ToolHello":
            if message.get("protocol_version") != PROTOCOL_VERSION:
                log(f"host speaks protocol {message.get('protocol_version')!r}; trying anyway")
            send({"type": "ToolRegister", "tool_process_name": "textstats", "tools": TOOLS})
        elif kind == "InvokeTool":
            worker = threading.Thread(target=run_call, args=(message,), daemon=True)
            worker.start()
            workers.append(worker)
        elif kind == "CancelInvocation":
            with _cancelled_lock:
                event = _cancelled.get(message.get("call_id"))
            if event is not None:
                event.set()
        elif kind == "ToolShutdown":
            break
        else:
            log(f"skipping unknown frame type {kind!r}")
    with _cancelled_lock:
        for event in _cancelled.values():
            event.set()
    for worker in workers:
        worker.join(timeout=1)


if __name__ == "__main__":
    main()
