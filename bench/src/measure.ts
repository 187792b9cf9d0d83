/**
 * Median microseconds per call for each contender, measured in interleaved rounds: every round
 * runs one batch of each, so load that comes and goes on the machine touches all of them alike.
 */
export async function compareMicros(
  contenders: Readonly<Record<string, () => unknown>>,
  options: { rounds?: number; batchSize?: number; warmup?: number } = {},
): Promise<Record<string, number>> {
  const rounds = options.rounds ?? 300;
  const batchSize = options.batchSize ?? 200;
  const warmup = options.warmup ?? 5000;
  const names = Object.keys(contenders);
  for (const name of names) for (let i = 0; i < warmup; i++) await contenders[name]!();
  (globalThis as { gc?: () => void }).gc?.();
  const samples = new Map<string, number[]>(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    for (const name of names) {
      const fn = contenders[name]!;
      const start = process.hrtime.bigint();
      for (let i = 0; i < batchSize; i++) await fn();
      samples.get(name)!.push(Number(process.hrtime.bigint() - start) / 1000 / batchSize);
    }
  }
  const result: Record<string, number> = {};
  for (const [name, list] of samples) {
    list.sort((a, b) => a - b);
    result[name] = list[Math.floor(list.length / 2)]!;
  }
  return result;
}

export function row(label: string, micros: number, baseline?: number): string {
  const ratio = baseline === undefined ? "" : `  ×${(micros / baseline).toFixed(1)} vs bare`;
  return `${label.padEnd(44)} ${micros.toFixed(3).padStart(9)} µs${ratio}`;
}
