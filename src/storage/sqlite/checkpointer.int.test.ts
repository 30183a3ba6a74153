import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createSqlitePath } from '../../testing/databases.js';
import { Checkpointer } from './checkpointer.js';
import { openDatabase } from './connection.js';
import { openSqliteStore } from './store.js';

describe('sqlite checkpointer', () => {
  it('copies the WAL into the database file on its own thread once a connection has written enough, and stops with the store', async () => {
    const path = createSqlitePath();
    const store = openSqliteStore(path);
    const data = { text: 'x'.repeat(1000) };
    // 1,500 commits of a kilobyte: a few thousand frames, under the writer's own checkpoint (10,000)
    for (let i = 0; i < 1500; i++)
      await store.eventAppend({ appends: [{ streamId: `s-${i % 10}`, events: [{ type: 't', data }] }] });
    // every page the WAL holds is in the file: the writer's own checkpoint leaves its last frames (under 1,000) in the WAL
    const reader = openDatabase(path, { migrate: false });
    const pages = () =>
      (reader.pragma('page_count', { simple: true }) as number) *
      (reader.pragma('page_size', { simple: true }) as number);
    const copied = async () => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(50))
        if (statSync(path).size === pages()) return true;
      return false;
    };
    expect(await copied()).toBe(true);
    reader.close();
    expect((await store.eventReadAll({ limit: 2000 })).length).toBe(1500);
    await store.close();
    // the last connection's close removes the WAL: the thread's connection closed before it
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('lets a process whose last work is closing the store end normally once the thread has stopped', async () => {
    // the thread is not referenced while it runs, but it is while it stops: a script whose last
    // step awaits the close ended before the close did (exit code 13, "closed" never printed)
    const store = fileURLToPath(new URL('./store.ts', import.meta.url));
    const script = `
      const { openSqliteStore } = await import(${JSON.stringify(store)});
      const store = openSqliteStore(${JSON.stringify(createSqlitePath())});
      for (let i = 0; i < 1100; i++) await store.eventAppend({ appends: [{ streamId: 's-' + (i % 10), events: [{ type: 't', data: { i } }] }] });
      await store.close();
      console.log('closed');`;
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script],
        { encoding: 'utf8' },
        (_error, stdout) => resolve({ code: child.exitCode, stdout }),
      );
    });
    expect(result).toEqual({ code: 0, stdout: 'closed\n' });
  });

  it('leaves checkpoints to the writer when its thread cannot start, and stops at once', async () => {
    const db = openDatabase(createSqlitePath());
    const checkpointer = Checkpointer.start(db, `${createSqlitePath()}.missing`);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(10_000);
    for (
      const deadline = Date.now() + 10_000;
      Date.now() < deadline && db.pragma('wal_autocheckpoint', { simple: true }) !== 1000;
    )
      await sleep(20);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await checkpointer.stop();
    db.close();
  });
});
