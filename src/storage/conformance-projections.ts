import { describe, expect, it } from 'vitest';
import type { Store } from './store.js';

/** Projections: the read tables the journal's projections write (`conformance.ts` sets up the store). */
export function projectionConformance(h: { store: () => Store }): void {
  describe('projections', () => {
    it('reads and writes many rows at once; a key given twice keeps its last value', async () => {
      await h.store().projectionPut({ name: 'v', key: 'a', value: { n: 0 } });
      await h.store().projectionPutMany({
        name: 'v',
        rows: [
          { key: 'b', value: { n: 1 } },
          { key: 'a', value: { n: 2 } },
          { key: 'b', value: { n: 3 } },
          { key: 'c', value: null },
        ],
      });
      const rows = await h.store().projectionGetMany({ name: 'v', keys: ['a', 'b', 'c', 'missing', 'a'] });
      expect(rows.sort((x, y) => (x.key < y.key ? -1 : 1))).toEqual([
        { key: 'a', value: { n: 2 } },
        { key: 'b', value: { n: 3 } },
        { key: 'c', value: null },
      ]);
      expect(await h.store().projectionGetMany({ name: 'other', keys: ['a'] })).toEqual([]);
      expect(await h.store().projectionGetMany({ name: 'v', keys: [] })).toEqual([]);
      await h.store().projectionPutMany({ name: 'v', rows: [] });
      await expect(
        h.store().transaction(async (tx) => {
          await tx.projectionPutMany({ name: 'v', rows: [{ key: 'd', value: 1 }] });
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await h.store().projectionGet({ name: 'v', key: 'd' })).toBeUndefined();
    });

    it('reads back in a transaction what it wrote, in the order it was written', async () => {
      await h.store().projectionPut({ name: 'v', key: 'gone', value: 0 });
      await h.store().transaction(async (tx) => {
        await tx.projectionPut({ name: 'v', key: 'a', value: 1 });
        await tx.projectionPutMany({ name: 'w', rows: [{ key: 'a', value: 'w' }] });
        await tx.projectionPut({ name: 'v', key: 'a', value: 2 });
        expect(await tx.projectionGet({ name: 'v', key: 'a' })).toBe(2);
        await tx.projectionPut({ name: 'v', key: 'b', value: 3 });
        await tx.projectionDelete({ name: 'v', key: 'b' });
        await tx.projectionDelete({ name: 'v', key: 'gone' });
        await tx.projectionPut({ name: 'v', key: 'gone', value: 4 });
        expect((await tx.projectionList({ name: 'v', limit: 10 })).map((r) => [r.key, r.value])).toEqual([
          ['a', 2],
          ['gone', 4],
        ]);
        await tx.projectionPut({ name: 'v', key: 'c', value: 5 });
      });
      expect((await h.store().projectionList({ name: 'v', limit: 10 })).map((r) => [r.key, r.value])).toEqual([
        ['a', 2],
        ['c', 5],
        ['gone', 4],
      ]);
      expect(await h.store().projectionGet({ name: 'w', key: 'a' })).toBe('w');
    });

    it('lists rows in key order by prefix, with exclusive bounds, both ways', async () => {
      for (const key of ['wf_b:ex_02', 'wf_a:ex_01', 'wf_b:ex_01', 'wf_b:ex_03', 'wf_bz:ex_01', 'Z', 'é']) {
        await h.store().projectionPut({ name: 'exec', key, value: { key } });
      }
      await h.store().projectionPut({ name: 'other', key: 'wf_b:ex_09', value: 1 });
      const keys = async (p: Omit<Parameters<Store['projectionList']>[0], 'name'>) =>
        (await h.store().projectionList({ name: 'exec', ...p })).map((r) => r.key);
      expect(await keys({ limit: 10 })).toEqual([
        'Z',
        'wf_a:ex_01',
        'wf_b:ex_01',
        'wf_b:ex_02',
        'wf_b:ex_03',
        'wf_bz:ex_01',
        'é',
      ]);
      expect(await keys({ prefix: 'wf_b:', limit: 10 })).toEqual(['wf_b:ex_01', 'wf_b:ex_02', 'wf_b:ex_03']);
      expect(await keys({ prefix: 'wf_b:', limit: 2, backwards: true })).toEqual(['wf_b:ex_03', 'wf_b:ex_02']);
      expect(await keys({ prefix: 'wf_b:', before: 'wf_b:ex_02', limit: 10, backwards: true })).toEqual(['wf_b:ex_01']);
      expect(await keys({ prefix: 'wf_b:', after: 'wf_b:ex_01', limit: 10 })).toEqual(['wf_b:ex_02', 'wf_b:ex_03']);
      // the newest-first pages of a whole view (GET /workflows, /rules, /schedules): no prefix, descending from a cursor
      expect(await keys({ before: 'wf_b:ex_01', limit: 2, backwards: true })).toEqual(['wf_a:ex_01', 'Z']);
      expect((await h.store().projectionList({ name: 'exec', prefix: 'wf_a:', limit: 1 }))[0]?.value).toEqual({
        key: 'wf_a:ex_01',
      });
    });
    it('lists rows newest first by createdAt, filtered in the database, page by page', async () => {
      const rows: Array<[string, number, string, string]> = [
        ['run_b', 1_000, 'success', 'a'],
        ['ex_a', 3_000, 'failed', 'runledger.stored'],
        ['ses_z', 2_000, 'running', 'runledger.session'],
        ['run_a', 3_000, 'success', 'b'],
        ['run_c', 4_000, 'waiting', 'a'],
      ];
      for (const [key, createdAt, status, workflow] of rows)
        await h.store().projectionPut({
          name: 'run',
          key,
          value: {
            createdAt,
            status,
            workflow,
            input: { workflow_id: workflow === 'runledger.stored' ? 'wf_1' : null },
          },
        });
      await h.store().projectionPut({ name: 'other', key: 'x', value: { createdAt: 9_000, status: 'success' } });
      await h.store().projectionPut({ name: 'run', key: 'odd', value: { createdAt: 'not a number' } });
      const keys = async (p: Omit<Parameters<Store['projectionListRecent']>[0], 'name'>) =>
        (await h.store().projectionListRecent({ name: 'run', ...p })).map((r) => r.key);
      // ties on createdAt go by key, descending
      expect(await keys({ limit: 10 })).toEqual(['run_c', 'run_a', 'ex_a', 'ses_z', 'run_b']);
      expect(await keys({ limit: 2, before: { createdAt: 3_000, key: 'run_a' } })).toEqual(['ex_a', 'ses_z']);
      expect(await keys({ limit: 10, where: [[{ field: 'status', in: ['success', 'waiting'] }]] })).toEqual([
        'run_c',
        'run_a',
        'run_b',
      ]);
      expect(await keys({ limit: 10, where: [[{ field: 'status', in: [] }]] })).toEqual([]);
      expect(
        await keys({ limit: 10, where: [[{ field: 'workflow', notIn: ['runledger.stored', 'runledger.session'] }]] }),
      ).toEqual(['run_c', 'run_a', 'run_b']);
      // a field named like a member of every object is a field like any other
      expect(await keys({ limit: 10, where: [[{ field: 'constructor', in: ['x'] }]] })).toEqual([]);
      // a group holds when one of its matches does; groups must all hold
      expect(
        await keys({
          limit: 10,
          where: [
            [
              { field: 'workflow', in: ['wf_1'] },
              { field: 'input.workflow_id', in: ['wf_1'] },
            ],
            [{ field: 'status', in: ['failed'] }],
          ],
        }),
      ).toEqual(['ex_a']);
      expect(await keys({ limit: 10, createdAfter: 1_000, createdBefore: 4_000 })).toEqual(['run_a', 'ex_a', 'ses_z']);
      await expect(
        (async () =>
          h
            .store()
            .projectionListRecent({ name: 'run', limit: 1, where: [[{ field: "status') OR 1=1 --", in: ['x'] }]] }))(),
      ).rejects.toThrow(/plain names/);
    });
    it('lists a replaced row by its new status and createdAt, and no longer by the old ones', async () => {
      const put = (value: unknown) => h.store().projectionPut({ name: 'run', key: 'run_x', value });
      const keys = async (status: string) =>
        (
          await h.store().projectionListRecent({ name: 'run', limit: 10, where: [[{ field: 'status', in: [status] }]] })
        ).map((r) => r.key);
      await put({ createdAt: 1_000, status: 'running', steps: 1 });
      await put({ createdAt: 1_000, status: 'running', steps: 2 });
      expect(await keys('running')).toEqual(['run_x']);
      await put({ createdAt: 1_000, status: 'success', steps: 3 });
      expect(await keys('running')).toEqual([]);
      expect(await keys('success')).toEqual(['run_x']);
      await put({ createdAt: 5_000, status: 'success', steps: 4 });
      await put({ steps: 5 });
      expect(await keys('success')).toEqual([]);
      await put({ createdAt: 5_000, status: 'success', steps: 6 });
      expect(
        (await h.store().projectionListRecent({ name: 'run', limit: 10, createdAfter: 4_000 })).map((r) => r.value),
      ).toEqual([{ createdAt: 5_000, status: 'success', steps: 6 }]);
      expect(await h.store().projectionListRecent({ name: 'run', limit: 10, createdBefore: 4_000 })).toEqual([]);
    });
    it('stores, replaces and deletes values', async () => {
      await h.store().projectionPut({ name: 'balance', key: 'acct-1', value: { total: 5 } });
      await h.store().projectionPut({ name: 'balance', key: 'acct-1', value: { total: 7 } });
      expect(await h.store().projectionGet({ name: 'balance', key: 'acct-1' })).toEqual({ total: 7 });
      expect(await h.store().projectionGet({ name: 'other', key: 'acct-1' })).toBeUndefined();
      await h.store().projectionDelete({ name: 'balance', key: 'acct-1' });
      expect(await h.store().projectionGet({ name: 'balance', key: 'acct-1' })).toBeUndefined();
    });
  });
}
