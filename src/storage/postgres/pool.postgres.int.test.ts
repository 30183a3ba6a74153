import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createPostgresDatabase } from '../../testing/databases.js';
import type { Store } from '../store.js';
import { openPostgresStore } from './store.js';

describe('the postgres pool', () => {
  let url: string;
  let store: Store;
  let admin: pg.Client;
  beforeEach(async () => {
    url = await createPostgresDatabase();
    store = await openPostgresStore(url, { poolSize: 1 });
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });
  afterEach(async () => {
    await admin.end();
    await store.close();
  });

  // the backends of the store's pool: every connection to its database but the admin's
  const backends = async () =>
    (
      await admin.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      )
    ).rows.map((r) => r.pid);

  it('keeps an idle connection open past a quiet spell, so the next request pays no new connection', async () => {
    await store.eventAppend({ appends: [{ streamId: 's', events: [{ type: 'x', data: 1 }] }] });
    const before = await backends();
    expect(before).toHaveLength(1);
    // pg's own default closes an idle connection after 10 s
    await sleep(11_000);
    expect(await backends()).toEqual(before);
    await store.eventAppend({ appends: [{ streamId: 's', events: [{ type: 'x', data: 2 }] }] });
    expect(await backends()).toEqual(before);
  }, 20_000);
});
