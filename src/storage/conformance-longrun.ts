import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../errors.js';
import { task } from './conformance-rows.js';
import type { Store } from './store.js';

const chunk = (data: Buffer) => ({ hash: createHash('sha256').update(data).digest('hex'), data });
const claim = (store: Store, queue: string, tags?: string[]) =>
  store.taskClaim({
    queue,
    limit: 10,
    leaseMs: 30_000,
    workerId: 'w',
    leaseToken: `l_${Math.random()}`,
    ...(tags ? { tags } : {}),
  });

/** Tags, pauses and blobs (issue 16) of the conformance suite (`conformance.ts` sets up the store). */
export function longrunConformance(h: { store: () => Store; openAnother: () => Promise<Store> }): void {
  describe('tagged tasks', () => {
    it('go only to a worker that has their tag; untagged tasks to anyone; no tags given: anything', async () => {
      await h.store().taskEnqueue({
        tasks: [task('q', { id: 'v1', tag: 'wf@1' }), task('q', { id: 'v2', tag: 'wf@2' }), task('q', { id: 'any' })],
      });
      expect((await h.store().taskGet({ id: 'v1' })).tag).toBe('wf@1');
      expect((await claim(h.store(), 'q', ['wf@3'])).map((t) => t.id)).toEqual(['any']);
      await h.store().taskEnqueue({ tasks: [task('q', { id: 'v2later', tag: 'wf@2', runAt: Date.now() + 60_000 })] });
      expect(await h.store().taskDueIn({ queue: 'q', tags: ['wf@3'] })).toBeNull();
      expect(await h.store().taskDueIn({ queue: 'q', tags: ['wf@2'] })).toBeGreaterThan(0);
      expect((await claim(h.store(), 'q', ['wf@2', 'other@1'])).map((t) => [t.id, t.tag])).toEqual([['v2', 'wf@2']]);
      expect((await claim(h.store(), 'q')).map((t) => t.id)).toEqual(['v1']);
    });

    it('of one ordering key still run one at a time in order, whatever the tags', async () => {
      await h.store().taskEnqueue({
        tasks: [
          task('q', { id: 'a', orderingKey: 'k', tag: 'wf@1' }),
          task('q', { id: 'b', orderingKey: 'k', tag: 'wf@2' }),
        ],
      });
      // b is next of its key only after a: a worker with only b's tag waits
      expect(await claim(h.store(), 'q', ['wf@2'])).toEqual([]);
      const [a] = await claim(h.store(), 'q', ['wf@1']);
      await h.store().taskComplete({ items: [{ id: a!.id, leaseToken: a!.leaseToken!, result: null }] });
      expect((await claim(h.store(), 'q', ['wf@2'])).map((t) => t.id)).toEqual(['b']);
    });
  });

  describe('pauses', () => {
    it('hold back a paused queue and the runs of a paused workflow until resumed; the first pause is kept', async () => {
      await h.store().taskEnqueue({
        tasks: [
          task('q', { id: 'plain' }),
          task('runs', { id: 'a1', tag: 'a@1' }),
          task('runs', { id: 'ab', tag: 'ab@1' }),
        ],
      });
      expect(await h.store().pauseSet({ kind: 'queue', name: 'q', pausedBy: 'ops', reason: 'incident' })).toBe(true);
      expect(await h.store().pauseSet({ kind: 'queue', name: 'q', pausedBy: 'later', reason: 'again' })).toBe(false);
      expect(await h.store().pauseSet({ kind: 'workflow', name: 'a', pausedBy: 'ops', reason: 'bad deploy' })).toBe(
        true,
      );
      expect(await claim(h.store(), 'q')).toEqual([]);
      expect(await h.store().taskDueIn({ queue: 'q' })).toBeNull();
      // 'ab' is another workflow: a prefix of a name is not the name
      expect((await claim(h.store(), 'runs')).map((t) => t.id)).toEqual(['ab']);
      expect(await h.store().taskDueIn({ queue: 'runs' })).toBeNull();
      const pauses = await h.store().pauseList();
      expect(pauses.map((p) => [p.kind, p.name, p.pausedBy, p.reason])).toEqual([
        ['queue', 'q', 'ops', 'incident'],
        ['workflow', 'a', 'ops', 'bad deploy'],
      ]);
      expect(typeof pauses[0]!.createdAt).toBe('number');
      expect(await h.store().pauseDelete({ kind: 'queue', name: 'q' })).toBe(true);
      expect(await h.store().pauseDelete({ kind: 'queue', name: 'q' })).toBe(false);
      expect(await h.store().pauseDelete({ kind: 'workflow', name: 'a' })).toBe(true);
      expect((await claim(h.store(), 'q')).map((t) => t.id)).toEqual(['plain']);
      expect((await claim(h.store(), 'runs')).map((t) => t.id)).toEqual(['a1']);
    });

    it('is seen by another process at once', async () => {
      const other = await h.openAnother();
      await h.store().taskEnqueue({ tasks: [task('q', { id: 't' })] });
      await h.store().pauseSet({ kind: 'queue', name: 'q', pausedBy: 'ops', reason: '' });
      expect(await claim(other, 'q')).toEqual([]);
      await h.store().pauseDelete({ kind: 'queue', name: 'q' });
      expect((await claim(other, 'q')).map((t) => t.id)).toEqual(['t']);
    });
  });

  describe('blobs', () => {
    it('stores chunks once by content, returns them in the order asked, and deletes them with their last owner', async () => {
      const one = chunk(randomBytes(300_000));
      const two = chunk(Buffer.from('{"small":true}'));
      await h.store().blobPut({ owner: 'run:a', chunks: [one, two] });
      await h.store().blobPut({ owner: 'run:b', chunks: [one] });
      await h.store().blobPut({ owner: 'run:b', chunks: [one] });
      const [t, o, t2] = await h.store().blobGet({ hashes: [two.hash, one.hash, two.hash] });
      expect(t!.equals(two.data)).toBe(true);
      expect(o!.equals(one.data)).toBe(true);
      expect(t2!.equals(two.data)).toBe(true);
      // b still holds `one`: only `two` goes
      expect(await h.store().blobDelete({ owner: 'run:a' })).toBe(1);
      expect((await h.store().blobGet({ hashes: [one.hash] }))[0]!.equals(one.data)).toBe(true);
      await expect(h.store().blobGet({ hashes: [two.hash] })).rejects.toBeInstanceOf(NotFoundError);
      expect(await h.store().blobDelete({ owner: 'run:b' })).toBe(1);
      expect(await h.store().blobDelete({ owner: 'run:b' })).toBe(0);
      await expect(h.store().blobGet({ hashes: [one.hash] })).rejects.toBeInstanceOf(NotFoundError);
    });

    it('writes chunks in the caller transaction: a rollback leaves none', async () => {
      const c = chunk(Buffer.from('rolled back'));
      await expect(
        h.store().transaction(async (tx) => {
          await tx.blobPut({ owner: 'run:x', chunks: [c] });
          expect((await tx.blobGet({ hashes: [c.hash] }))[0]!.toString()).toBe('rolled back');
          throw new Error('no');
        }),
      ).rejects.toThrow('no');
      await expect(h.store().blobGet({ hashes: [c.hash] })).rejects.toBeInstanceOf(NotFoundError);
    });
  });
}
