import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * How fast this machine is now, beside the results: the same machine kind measured 2x apart on
 * different days, so a result is compared with a baseline of the same run, and these say how the
 * day's machine compares. `cpu_loop_ms`: a fixed loop of integer work (the median of 5);
 * `fsync_ms`: writing 4 KiB and fsyncing it (the median of 200, in the temp directory, where the
 * SQLite benchmarks write); `load_average_1m`: when the bench started.
 */
export function machineReference(): { cpu_loop_ms: number; fsync_ms: number; load_average_1m: number } {
  const load = loadavg()[0]!;
  const loops: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = performance.now();
    let x = 0;
    for (let i = 0; i < 50_000_000; i++) x = (x + i * 7) % 1_000_003;
    if (x < 0) throw new Error('unreachable');
    loops.push(performance.now() - start);
  }
  const dir = mkdtempSync(join(tmpdir(), 'rl-fsync-'));
  const fd = openSync(join(dir, 'probe'), 'w');
  const page = Buffer.alloc(4096, 1);
  const syncs: number[] = [];
  try {
    for (let i = 0; i < 200; i++) {
      const start = performance.now();
      writeSync(fd, page, 0, page.length, 0);
      fsyncSync(fd);
      syncs.push(performance.now() - start);
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const round = (n: number) => Math.round(n * 100) / 100;
  return { cpu_loop_ms: round(median(loops)), fsync_ms: round(median(syncs)), load_average_1m: round(load) };
}
