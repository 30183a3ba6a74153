import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { type SessionService, sessions } from './service.js';

/** `SessionService.reload` (runledger dev's save of an agents module): new sessions run the new agents, one in flight its own. */
describe.each(backends)('reloading agents on $name', (backend) => {
  let service: SessionService;
  let close: () => Promise<void>;
  /** What each session's agent replied, by session id. */
  const replies = new Map<string, string>();
  /** Sessions held mid-turn until their id is in here. */
  const go = new Set<string>();
  const greeter = (tag: string) =>
    defineAgent('greeter', async (input: { wait?: boolean }, ctx) => {
      while (input.wait && !go.has(ctx.sessionId)) await new Promise((r) => setTimeout(r, 20));
      replies.set(ctx.sessionId, tag);
    });
  const replied = (id: string) => eventually(() => replies.get(id), 20_000);

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 50 });
    service = sessions(t.engine, t.engine.store, { agents: [greeter('v1')] });
    close = t.close;
  });
  afterEach(() => close());

  it('starts new sessions on the new agents; a session mid-turn ends on the code it started on', async () => {
    const held = (await service.create({ agent: 'greeter', input: { wait: true } })).session_id;
    await eventually(async () => (await service.get(held)).status !== 'pending');
    const version = service.reload({ agents: [greeter('v2')] });
    expect(version).toBe('1.1');
    const next = (await service.create({ agent: 'greeter', input: {} })).session_id;
    expect(await replied(next)).toBe('v2');
    go.add(held);
    expect(await replied(held)).toBe('v1');
  });

  it('refuses two agents of one name, keeping the ones it has', async () => {
    expect(() => service.reload({ agents: [greeter('v2'), greeter('v3')] })).toThrow(ValidationError);
    const id = (await service.create({ agent: 'greeter', input: {} })).session_id;
    expect(await replied(id)).toBe('v1');
  });
});
