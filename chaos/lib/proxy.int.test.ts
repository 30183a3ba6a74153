import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { createPostgresDatabase } from '../../src/testing/databases.js';
import { Proxy } from './proxy.js';

describe('the chaos TCP proxy in front of PostgreSQL', () => {
  it('forwards queries, resets every connection on a drop, and holds them back for the length of a stall', async () => {
    const direct = await createPostgresDatabase();
    const url = new URL(direct);
    const proxy = await new Proxy({ host: url.hostname, port: Number(url.port) }).start();
    const client = new pg.Client({ connectionString: proxy.through(direct) });
    client.on('error', () => {});
    try {
      await client.connect();
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      expect(proxy.dropAll()).toBe(1);
      await expect(client.query('SELECT 1')).rejects.toThrow();

      const again = new pg.Client({ connectionString: proxy.through(direct) });
      await again.connect();
      const stalled = proxy.stall(1500);
      const t0 = Date.now();
      const answered = await again.query('SELECT 2 AS two');
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
      expect(answered.rows).toEqual([{ two: 2 }]);
      await stalled;
      await again.end();
    } finally {
      await proxy.close();
    }
  });
});
