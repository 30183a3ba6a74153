import { describe, expect, it } from 'vitest';
import { ConflictError } from '../errors.js';
import type { NewApiKey, Store } from './store.js';

const key = (name: string, hash: string): NewApiKey => ({
  id: `key_${name}`,
  name,
  issuedTo: name === 'ci' ? null : 'ana@example.com',
  prefix: hash.slice(0, 8),
  hash,
  roles: ['viewer', 'operator'],
  namespace: 'default',
});

/** The `api_keys` table (`conformance.ts` sets up the store). */
export function keyConformance(h: { store: () => Store }): void {
  describe('api keys', () => {
    it('stores a key and finds it by id or by hash, revoked ones too', async () => {
      const s = h.store();
      const before = await s.now();
      const row = await s.apiKeyInsert(key('ana', 'h-ana'));
      expect(row).toMatchObject({ ...key('ana', 'h-ana'), revokedAt: null, lastUsedAt: null });
      expect(row.createdAt).toBeGreaterThanOrEqual(before);
      await s.apiKeyInsert({ ...key('ci', 'h-ci'), roles: ['worker'], namespace: '*' });
      expect(await s.apiKeyFind({ id: 'key_ana' })).toEqual(row);
      expect(await s.apiKeyFind({ hash: 'h-ci' })).toMatchObject({
        name: 'ci',
        issuedTo: null,
        roles: ['worker'],
        namespace: '*',
      });
      expect(await s.apiKeyFind({ hash: 'nope' })).toBeUndefined();
      expect((await s.apiKeyList()).map((k) => k.name)).toEqual(['ana', 'ci']);
    });

    it('refuses a second key of one name, revoked or not', async () => {
      const s = h.store();
      await s.apiKeyInsert(key('ana', 'h1'));
      await s.apiKeyUpdate({ id: 'key_ana', change: { kind: 'revoke' } });
      await expect(s.apiKeyInsert({ ...key('ana', 'h2'), id: 'key_other' })).rejects.toThrow(ConflictError);
      await expect(s.apiKeyInsert({ ...key('ana', 'h2'), id: 'key_other' })).rejects.toThrow(/ana/);
      expect(await s.apiKeyList()).toHaveLength(1);
    });

    it('rotates a live key, revokes once, and records its use', async () => {
      const s = h.store();
      await s.apiKeyInsert(key('ana', 'old-hash'));
      const rotated = await s.apiKeyUpdate({
        id: 'key_ana',
        change: { kind: 'rotate', hash: 'new-hash', prefix: 'rl_newpr' },
      });
      expect(rotated).toMatchObject({ hash: 'new-hash', prefix: 'rl_newpr' });
      expect(await s.apiKeyFind({ hash: 'old-hash' })).toBeUndefined();
      const used = await s.apiKeyUpdate({ id: 'key_ana', change: { kind: 'use' } });
      expect(used!.lastUsedAt).toBeGreaterThanOrEqual(rotated!.createdAt);
      const revoked = await s.apiKeyUpdate({ id: 'key_ana', change: { kind: 'revoke' } });
      expect(revoked!.revokedAt).not.toBeNull();
      const again = await s.apiKeyUpdate({ id: 'key_ana', change: { kind: 'revoke' } });
      expect(again!.revokedAt).toBe(revoked!.revokedAt);
      // a revoked key gets no new secret
      expect(
        await s.apiKeyUpdate({ id: 'key_ana', change: { kind: 'rotate', hash: 'x', prefix: 'x' } }),
      ).toBeUndefined();
      expect((await s.apiKeyFind({ id: 'key_ana' }))!.hash).toBe('new-hash');
      expect(await s.apiKeyUpdate({ id: 'key_none', change: { kind: 'revoke' } })).toBeUndefined();
    });

    it('writes nothing from a transaction that rolls back', async () => {
      const s = h.store();
      await expect(
        s.transaction(async (tx) => {
          await tx.apiKeyInsert(key('ana', 'h'));
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect(await s.apiKeyList()).toEqual([]);
    });
  });
}
