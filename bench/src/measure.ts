/** Median microseconds per call of `fn`, measured in batches so timer overhead does not dominate. */
export async function medianMicros(fn: () => unknown, options: { batches?: number; batchSize?: number; warmup?: number } = {}): Promise<number> {
  const batches = options.batches ?? 200;
  const batchSize = options.batchSize ?? 200;
  const warmup = options.warmup ?? 2000;
  for (let i = 0; i < warmup; i++) await fn();
  (globalThis as { gc?: () => void }).gc?.();
  const samples: number[] = [];
  for (let b = 0; b < batches; b++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < batchSize; i++) await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1000 / batchSize);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

export function row(label: string, micros: number, baseline?: number): string {
  const ratio = baseline === undefined ? "" : `  ×${(micros / baseline).toFixed(1)} vs bare`;
  return `${label.padEnd(44)} ${micros.toFixed(3).padStart(9)} µs${ratio}`;
}
