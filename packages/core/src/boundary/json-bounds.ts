/**
 * Bounds for JSON that came from outside (a tool's output, a frame, an MCP result), checked with an
 * iterative walk before anything recursive (a schema, the redactor, canonical JSON) touches it, so
 * a value nested 100,000 levels deep is refused instead of overflowing the stack.
 */
export interface JsonBounds {
  /** Deepest nesting of arrays and objects; default 128. */
  readonly maxDepth?: number;
  /** Values in all, containers and leaves; default 1,000,000. */
  readonly maxNodes?: number;
  /** Entries in one array or keys in one object; default 100,000. */
  readonly maxEntries?: number;
  /** Characters in one string or key; default 16 Mi. */
  readonly maxStringLength?: number;
}

/** What is over a bound, or undefined when `value` is within all of them. Never recurses, never throws. */
export function jsonBoundsProblem(value: unknown, bounds: JsonBounds = {}): string | undefined {
  const maxDepth = bounds.maxDepth ?? 128;
  const maxNodes = bounds.maxNodes ?? 1_000_000;
  const maxEntries = bounds.maxEntries ?? 100_000;
  const maxString = bounds.maxStringLength ?? 16 * 1024 * 1024;
  const stack: [unknown, number][] = [[value, 0]];
  let nodes = 0;
  try {
    while (stack.length > 0) {
      const [current, depth] = stack.pop()!;
      if (++nodes > maxNodes) return `more than ${maxNodes} values`;
      if (typeof current === "string") {
        if (current.length > maxString) return `a string longer than ${maxString} characters`;
        continue;
      }
      if (current === null || typeof current !== "object") continue;
      if (depth >= maxDepth) return `nesting deeper than ${maxDepth} levels`;
      if (Array.isArray(current)) {
        if (current.length > maxEntries) return `an array of more than ${maxEntries} entries`;
        for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], depth + 1]);
        continue;
      }
      const keys = Object.keys(current);
      if (keys.length > maxEntries) return `an object of more than ${maxEntries} keys`;
      for (const key of keys) {
        if (key.length > maxString) return `a key longer than ${maxString} characters`;
        stack.push([(current as Record<string, unknown>)[key], depth + 1]);
      }
    }
  } catch {
    return "a value that cannot be read (a getter that throws)";
  }
  return undefined;
}
