type Contenders = Readonly<Record<string, () => unknown>>;
type Options = { rounds?: number; batchSize?: number; warmup?: number };

const median = (list: number[]): number => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;

/**
 * Median microseconds per call for each contender, measured in interleaved rounds: every round
 * runs one batch of each, so load that comes and goes on the machine touches all of them alike.
 * `wall` is elapsed time; `cpu` is this process's CPU time (every thread: GC helpers, the file
 * system pool), which other work on a shared machine inflates far less than elapsed time.
 */
export async function compareTimes(contenders: Contenders, options: Options = {}): Promise<{ wall: Record<string, number>; cpu: Record<string, number> }> {
  const rounds = options.rounds ?? 300;
  const batchSize = options.batchSize ?? 200;
  const warmup = options.warmup ?? 5000;
  const names = Object.keys(contenders);
  for (const name of names) for (let i = 0; i < warmup; i++) await contenders[name]!();
  (globalThis as { gc?: () => void }).gc?.();
  const wall = new Map<string, number[]>(names.map((n) => [n, []]));
  const cpu = new Map<string, number[]>(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    for (const name of names) {
      const fn = contenders[name]!;
      const start = process.hrtime.bigint();
      const startCpu = process.cpuUsage();
      for (let i = 0; i < batchSize; i++) await fn();
      const used = process.cpuUsage(startCpu);
      wall.get(name)!.push(Number(process.hrtime.bigint() - start) / 1000 / batchSize);
      cpu.get(name)!.push((used.user + used.system) / batchSize);
    }
  }
  return {
    wall: Object.fromEntries(names.map((n) => [n, median(wall.get(n)!)])),
    cpu: Object.fromEntries(names.map((n) => [n, median(cpu.get(n)!)])),
  };
}

/** Median elapsed microseconds per call for each contender (see `compareTimes`). */
export async function compareMicros(contenders: Contenders, options: Options = {}): Promise<Record<string, number>> {
  return (await compareTimes(contenders, options)).wall;
}

/** One line: elapsed µs per call, the ratio to the bare call, and CPU µs per call when given. */
export function row(label: string, micros: number, baseline?: number, cpu?: number): string {
  const ratio = baseline === undefined ? "" : `  ×${(micros / baseline).toFixed(1)} vs bare`;
  const cpuText = cpu === undefined ? "" : `  (cpu ${cpu.toFixed(1)} µs)`;
  return `${label.padEnd(44)} ${micros.toFixed(3).padStart(9)} µs${ratio.padEnd(16)}${cpuText}`;
}
