/** True for a plain JSON object: not null, not an array. Every emulator reads request bodies with it. */
export const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
