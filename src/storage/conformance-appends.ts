import { describe, expect, it } from 'vitest';
import { ConflictError } from '../errors.js';
import type { AppendResult, EventAppendParams, Store } from './store.js';

/**
 * Appends made at once outside a transaction (`conformance.ts` sets up the store): a store commits
 * them together (`append-batch.ts`), and each still behaves as if it went alone: its own events,
 * versions gapless per stream, its own idempotency key, its own failure.
 */
export function appendConformance(h: { store: () => Store }): void {
  describe('appends made at once', () => {
    it('each get their own events: versions gapless per stream, a repeated key the first events', async () => {
      const store = h.store();
      const before = await store.eventAppend({
        idempotencyKey: 'burst-old',
        appends: [{ streamId: 'burst-0', events: [{ type: 'Old', data: -1 }] }],
      });
      const sent: EventAppendParams[] = Array.from({ length: 30 }, (_, i) => ({
        ...(i % 2 === 0 ? { idempotencyKey: `burst-${i}` } : {}),
        appends: [
          {
            streamId: `burst-${i % 3}`,
            events: Array.from({ length: 1 + (i % 3) }, (_, k) => ({
              type: `E${i}`,
              data: { i, k },
              metadata: { m: i },
            })),
          },
        ],
      }));
      // a key twice in the burst, and a key used before it
      sent.push({
        idempotencyKey: 'burst-4',
        appends: [{ streamId: 'burst-1', events: [{ type: 'Again', data: { i: 4, k: 0 }, metadata: { m: 4 } }] }],
      });
      sent.push({
        idempotencyKey: 'burst-old',
        appends: [{ streamId: 'burst-0', events: [{ type: 'Again', data: null, metadata: { m: 0 } }] }],
      });
      const results = await Promise.all(sent.map((p) => store.eventAppend(p)));

      // of the two appends with key burst-4, sent at once, either may win: the other gets its events
      const [won, lost] = results[4]!.duplicate ? [30, 4] : [4, 30];
      expect(results[lost]).toEqual({ duplicate: true, events: results[won]!.events });
      expect(results[31]).toEqual({ duplicate: true, events: before.events });
      const written = results.map((r, i) => [r, i] as const).filter(([, i]) => i !== lost && i !== 31);
      for (const [result, i] of written) {
        expect(result.duplicate).toBe(false);
        const append = sent[i]!.appends[0]!;
        expect(result.events.map((e) => [e.streamId, e.type, e.data, e.metadata])).toEqual(
          append.events.map((e) => [append.streamId, e.type, e.data, e.metadata]),
        );
        const versions = result.events.map((e) => e.version);
        expect(versions).toEqual(versions.map((_, k) => versions[0]! + k));
      }

      const told = new Map(
        written.flatMap(([r]: readonly [AppendResult, number]) => r.events.map((e) => [e.position, e])),
      );
      for (const stream of ['burst-0', 'burst-1', 'burst-2']) {
        const stored = await store.eventReadStream({ streamId: stream });
        expect(stored.map((e) => e.version)).toEqual(stored.map((_, k) => k + 1));
        for (const event of stored) if (event.type !== 'Old') expect(event).toEqual(told.get(event.position));
      }
      expect(told.size).toBe(written.reduce((n, [, i]) => n + sent[i]!.appends[0]!.events.length, 0));
    });

    it('fails only the caller whose append fails (a version mismatch); the others commit', async () => {
      const store = h.store();
      const settled = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) =>
          store.eventAppend({
            appends: [
              {
                streamId: `lone-${i % 2}`,
                events: [{ type: `E${i}`, data: i }],
                ...(i === 5 ? { expectedVersion: 7 } : {}),
              },
            ],
          }),
        ),
      );
      expect(settled.map((s) => s.status)).toEqual([
        'fulfilled',
        'fulfilled',
        'fulfilled',
        'fulfilled',
        'fulfilled',
        'rejected',
        'fulfilled',
        'fulfilled',
      ]);
      expect((settled[5] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      // appends made at once keep no order among themselves (the first goes alone, at once, the others together)
      expect((await store.eventReadStream({ streamId: 'lone-0' })).map((e) => e.type).sort()).toEqual([
        'E0',
        'E2',
        'E4',
        'E6',
      ]);
      expect((await store.eventReadStream({ streamId: 'lone-1' })).map((e) => e.type).sort()).toEqual([
        'E1',
        'E3',
        'E7',
      ]);
    });
  });
}
