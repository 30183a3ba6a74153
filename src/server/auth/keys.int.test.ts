import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../storage/open.js';
import type { Store } from '../../storage/store.js';
import { backends } from '../../testing/backends.js';
import { ApiKeys, KEY_CACHE_MS } from './keys.js';

describe.each(backends)('the key cache of two processes on $name', (backend) => {
  let store: Store;
  beforeEach(async () => {
    store = await openStore(await backend.create());
  });
  afterEach(() => store.close());

  it('turns keys on and stops a revoked key at once here, within KEY_CACHE_MS in another process', async () => {
    let now = 1_000_000;
    const here = new ApiKeys(store, { now: () => now });
    const there = new ApiKeys(store, { now: () => now });
    expect(await there.enabled()).toBe(false);
    const { key, secret } = await here.create({ name: 'ana', issuedTo: 'ana@example.com', roles: ['approver'] });
    expect(await here.enabled()).toBe(true);
    // the other process looks again once its answer is KEY_CACHE_MS old
    expect(await there.enabled()).toBe(false);
    now += KEY_CACHE_MS;
    expect(await there.enabled()).toBe(true);
    expect(await there.authenticate(secret)).toEqual({ key: 'ana', issuedTo: 'ana@example.com', roles: ['approver'] });
    await here.revoke(key.id);
    expect(await here.authenticate(secret)).toBeNull();
    expect(await there.authenticate(secret)).not.toBeNull();
    now += KEY_CACHE_MS;
    expect(await there.authenticate(secret)).toBeNull();
    // revoked keys still count: revoking the last key never opens the server
    expect(await new ApiKeys(store).enabled()).toBe(true);
    await expect.poll(async () => (await store.apiKeyFind({ id: key.id }))?.lastUsedAt).not.toBeNull();
  });

  it('is the bootstrap admin for the token, and nothing else without a key table', async () => {
    const keys = new ApiKeys(undefined, { token: 'boot' });
    expect(await keys.enabled()).toBe(true);
    expect(await keys.authenticate('boot')).toEqual({ key: 'bootstrap', roles: ['admin'] });
    expect(await keys.authenticate('boot2')).toBeNull();
    expect(await new ApiKeys(undefined).enabled()).toBe(false);
  });
});
