import type { Journal } from "../journal/types.js";

/** A journal with a switch: while `crashed`, its result writes fail. */
export type CrashingJournal<TJournal extends Journal = Journal> = TJournal & {
  /** While true, every `settleIntent` rejects; set it back to false for the restarted process. */
  crashed: boolean;
};

/**
 * Wrap a journal so a test can simulate a crash between an effect and its record: while
 * `crashed` is true, `settleIntent` rejects as if the process died before the result was
 * journaled, so the intent stays pending for recovery. Everything else reaches `journal`.
 */
export function createCrashingJournal<TJournal extends Journal>(journal: TJournal): CrashingJournal<TJournal> {
  let crashed = false;
  const died = () => Promise.reject(new Error("the process died before the result was journaled"));
  return new Proxy(journal, {
    get(target, key) {
      if (key === "crashed") return crashed;
      if (key === "settleIntent" && crashed) return died;
      const value: unknown = Reflect.get(target, key);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
    set(target, key, value) {
      if (key !== "crashed") return Reflect.set(target, key, value);
      crashed = Boolean(value);
      return true;
    },
  }) as CrashingJournal<TJournal>;
}
