import { describe, expect, it } from 'vitest';
import { openStore } from '../../storage/open.js';
import { backends } from '../../testing/backends.js';
import { advertise, liveTags, RUN_WORKERS } from './versions.js';

describe.each(backends)('workers advertising their versions on $name', (backend) => {
  it('counts a worker live while it renews, not once it stopped or its row expired, and sweeps rows long dead', async () => {
    const store = await openStore(await backend.create());
    try {
      const now = await store.now();
      // a worker killed an hour and more ago, and one killed a moment ago
      await store.projectionPut({
        name: RUN_WORKERS,
        key: 'long-dead',
        value: { tags: ['old@1'], expiresAt: now - 4_000_000, createdAt: now - 5_000_000 },
      });
      await store.projectionPut({
        name: RUN_WORKERS,
        key: 'just-dead',
        value: { tags: ['gone@1'], expiresAt: now - 1, createdAt: now - 100 },
      });
      const errors: unknown[] = [];
      const stop = advertise(
        store,
        'w-1',
        () => ['order@1', 'order@2'],
        50,
        (error) => errors.push(error),
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect([...(await liveTags(store))].sort()).toEqual(['order@1', 'order@2']);
      const keys = (await store.projectionList({ name: RUN_WORKERS, limit: 10 })).map((r) => r.key);
      expect(keys.sort()).toEqual(['just-dead', 'w-1']);
      await stop();
      expect(await liveTags(store)).toEqual(new Set());
      expect(errors).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
