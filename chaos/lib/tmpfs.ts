import { execFile } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ScenarioContext } from './context.js';

const run = promisify(execFile);

/** A small tmpfs mounted under the scenario's folder (needs root); unmounted when the scenario is cleaned up. */
export async function smallDisk(ctx: ScenarioContext, megabytes: number): Promise<string> {
  const dir = join(ctx.dir, 'disk');
  mkdirSync(dir);
  await run('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', dir]);
  ctx.defer(async () => {
    await run('umount', [dir]).catch(() => run('umount', ['-l', dir]));
  });
  return dir;
}

/** Fills the disk of `dir` to the last byte with one file; returns a function that deletes it. */
export function fillDisk(dir: string): { bytes: number; free: () => void } {
  const file = join(dir, 'filler');
  const fd = openSync(file, 'w');
  let bytes = 0;
  for (const size of [1 << 20, 1 << 12, 1]) {
    const chunk = Buffer.alloc(size, 0x78);
    try {
      for (;;) bytes += writeSync(fd, chunk);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
    }
  }
  closeSync(fd);
  return { bytes, free: () => rmSync(file) };
}
