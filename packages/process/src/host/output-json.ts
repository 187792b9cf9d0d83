import { types } from "node:util";
import { z } from "zod";

/**
 * Bounds of the fast certificate. A value outside them is not refused here, only left to `z.json()`,
 * which reads it as before (a cycle or a shared subtree that multiplies the walk ends here too).
 */
const CERT_MAX_DEPTH = 64;
const CERT_MAX_VALUES = 100_000;
const CERT_MAX_ENTRIES = 10_000;
/** An array's own descriptors cost about what `z.json()` spends on a number: a longer array goes to it directly. */
const CERT_MAX_ARRAY = 256;

const { getOwnPropertyDescriptor, getOwnPropertyNames, getOwnPropertySymbols, getPrototypeOf, isExtensible } = Object;

/** An own property `z.json()` would copy unchanged: an enumerable, writable, configurable data property. */
function plainData(descriptor: PropertyDescriptor | undefined): descriptor is PropertyDescriptor {
  return descriptor !== undefined && descriptor.enumerable === true && descriptor.writable === true && descriptor.configurable === true;
}

/**
 * True when `value` is plain JSON data that `z.json()` accepts and would hand back as an equal copy:
 * strings, finite numbers, booleans, null, dense arrays and plain objects of enumerable, writable data
 * properties with string keys (no `__proto__` key), extensible, not proxies, all the way down. Runs no
 * code of the value's (no getter, no proxy trap: properties are read through their descriptors), never
 * throws, allocates no copy. False for anything else, which `z.json()` then reads exactly as before.
 */
export function isCertifiedJson(value: unknown): boolean {
  const values: unknown[] = [value];
  const depths: number[] = [0];
  let count = 0;
  while (values.length > 0) {
    const current = values.pop();
    const depth = depths.pop()!;
    if (++count > CERT_MAX_VALUES) return false;
    const kind = typeof current;
    if (kind === "string" || kind === "boolean" || current === null) continue;
    if (kind === "number") {
      if (Number.isFinite(current)) continue;
      return false;
    }
    // Not JSON (undefined, a function, a symbol, a bigint), or a container the copy would not equal.
    if (kind !== "object" || depth >= CERT_MAX_DEPTH) return false;
    const container = current as object;
    if (types.isProxy(container) || !isExtensible(container) || getOwnPropertySymbols(container).length > 0) return false;
    if (Array.isArray(container)) {
      // The copy is a dense Array of the indices alone: no holes, no other own property but `length`.
      const length = container.length;
      if (getPrototypeOf(container) !== Array.prototype || length > CERT_MAX_ARRAY || getOwnPropertyNames(container).length !== length + 1) return false;
      for (let i = 0; i < length; i++) {
        const descriptor = getOwnPropertyDescriptor(container, i);
        if (!plainData(descriptor)) return false;
        values.push(descriptor.value);
        depths.push(depth + 1);
      }
      continue;
    }
    if (getPrototypeOf(container) !== Object.prototype) return false;
    const names = getOwnPropertyNames(container);
    if (names.length > CERT_MAX_ENTRIES) return false;
    for (const name of names) {
      // The copy drops a `__proto__` key.
      const descriptor = name === "__proto__" ? undefined : getOwnPropertyDescriptor(container, name);
      if (!plainData(descriptor)) return false;
      values.push(descriptor.value);
      depths.push(depth + 1);
    }
  }
  return true;
}

/** The full check, exactly as before: a recursive union that copies what it accepts. */
const strictJson = z.json();

/**
 * `z.json()` with a fast path: a value `isCertifiedJson` passes is accepted as it is (it equals the copy
 * `z.json()` would make, and it is handed back without one); anything else is read by `z.json()`
 * itself, with its verdict, its copy and its issues. Never more lenient. A lazy wrapper, so the JSON
 * Schema rendered where it is nested (as the output of `processOutputSchema`) is `z.json()`'s own.
 * The value is not copied: the caller must hand over a value nothing else still writes to (the frame
 * decoder's output is one).
 */
export function fastJson(): typeof strictJson {
  const schema = z.lazy(() => strictJson) as unknown as typeof strictJson;
  const full = schema._zod.run;
  const run: typeof full = (payload, ctx) => (isCertifiedJson(payload.value) ? payload : full(payload, ctx));
  schema._zod.parse = run;
  schema._zod.run = run;
  return schema;
}
