import Database from 'better-sqlite3';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { underMixedLoad } from '../lib/mixed.js';
import type { Scenario } from '../lib/scenario.js';
import { fillDisk, smallDisk } from '../lib/tmpfs.js';

const RECOVERY_WAIT_MS = 40_000;

/**
 * The SQLite file lives on a 20 MB tmpfs that fills up to the last byte under load, stays full
 * for a while, then gets its space back. The engine should refuse writes cleanly (the figures
 * count 5xx other than 503; the notes say what it answered), corrupt nothing (`PRAGMA
 * integrity_check`, the journal checker) and carry on once there is room. Recovery: from the
 * space coming back until every run in flight when the disk filled moved again.
 */
export const diskFull: Scenario = {
  name: 'disk-full',
  backends: ['sqlite'],
  async run(ctx) {
    const disk = await smallDisk(ctx, 20);
    const database = join(disk, 'app.db');
    ctx.databases.push(database);
    const f = await underMixedLoad(ctx, {
      database,
      executions: ctx.size(300, 80),
      messages: ctx.size(150, 40),
      fault: async ({ watcher, api, figures }) => {
        await sleep(ctx.random.int(2000, 3000));
        const snapshot = await watcher.inFlight();
        const before = new Map(api.statuses);
        const filled = fillDisk(disk);
        await sleep(ctx.size(10_000, 5000));
        const during = [...api.statuses]
          .map(([s, n]) => [s, n - (before.get(s) ?? 0)] as const)
          .filter(([, n]) => n > 0);
        filled.free();
        const r = await watcher.recovery(snapshot, Date.now(), RECOVERY_WAIT_MS);
        figures.recoverySeconds = r.timedOut ? RECOVERY_WAIT_MS / 1000 : r.seconds;
        const answers = during.map(([s, n]) => `${s}×${n}`).join(' ');
        const refusals = during.filter(([s]) => s >= 400).map(([s]) => `${s}: ${api.firstBody.get(s)}`);
        figures.notes.push(
          `disk full (${Math.round(filled.bytes / 1024)} KiB filler) for ${ctx.size(10, 5)}s with ${snapshot.size} runs in flight; answers meanwhile: ${answers || 'none'}`,
          ...refusals,
        );
        ctx.log(
          `disk full, then freed: ${answers}; ${r.timedOut ? 'not moving again' : `moving again ${r.seconds ?? '-'}s after`}`,
        );
      },
    });
    const db = new Database(database, { readonly: true });
    try {
      const integrity = (db.pragma('integrity_check') as Array<{ integrity_check: string }>).map(
        (row) => row.integrity_check,
      );
      if (integrity.join() !== 'ok') {
        f.journal += 1;
        f.notes.push(`PRAGMA integrity_check: ${integrity.slice(0, 5).join('; ')}`);
      } else f.notes.push('PRAGMA integrity_check: ok');
    } finally {
      db.close();
    }
    return f;
  },
};
