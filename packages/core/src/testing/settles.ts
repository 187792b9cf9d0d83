/**
 * Whether `promise` settles (resolves or rejects) within `ms`. For "returns rather than hangs" checks on
 * real processes and servers: the bound is generous, so a loaded machine cannot fail it, while a hang
 * still does; how fast it returned is for benchmarks, not tests.
 */
export async function settlesWithin(promise: Promise<unknown>, ms = 30_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
