import { afterEach, describe, expect, it } from 'vitest';
import { CancelledError, ValidationError } from '../../errors.js';
import type { Engine } from '../../engine.js';
import { backends } from '../../testing/backends.js';
import { testEngine } from '../../testing/engine.js';
import { workflow, type Workflow } from '../workflow.js';

/** A workflow with `onDeadline: 'cancel'`: its runs' timeout is a cancellation by the system (brief 004 §9.1), journaled. */
describe.each(backends)("a run's deadline as the system's cancel on $name", (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const engineWith = async (...workflows: Workflow[]): Promise<Engine> => {
    const made = await testEngine(backend, { workflows, pollMs: 100 });
    close = made.close;
    return made.engine;
  };
  const events = async (engine: Engine, id: string) => engine.journal.readStream(`run:${id}`);

  it('cancels a run whose step is running at the deadline: the step sees it, compensations run, by: system', async () => {
    const undone: string[] = [];
    let seen: unknown = null;
    const late = workflow('late-cancel', { onDeadline: 'cancel' }, async (ctx) => {
      await ctx.step('reserve', async () => 'r', { compensate: async () => void undone.push('released') });
      await ctx.step(
        'hang',
        ({ signal }) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject((seen = signal.reason)))),
      );
    });
    const engine = await engineWith(late);
    const run = await engine.start(late, {}, { id: 'late-1', timeout: '500ms' });
    await expect(run.result()).rejects.toThrow(CancelledError);
    expect(seen).toBeInstanceOf(CancelledError);
    expect(undone).toEqual(['released']);
    const journal = await events(engine, 'late-1');
    expect(journal.filter((e) => e.type === 'run.cancel_requested').map((e) => e.data)).toEqual([
      { reason: expect.stringMatching(/^timeout: the run had not ended by its deadline \(\d{4}-.*Z\)$/), by: 'system' },
    ]);
    expect(journal.at(-1)?.type).toBe('run.cancelled');
  });

  it('cancels a run that sleeps past its deadline, in the pass the deadline wakes; one a user cancelled earlier shows that request alone', async () => {
    const sleepy = workflow('sleepy-cancel', { onDeadline: 'cancel' }, async (ctx) => {
      await ctx.sleep('long', '1h');
    });
    const engine = await engineWith(sleepy);
    const run = await engine.start(sleepy, {}, { id: 'sleepy-1', timeout: '300ms' });
    await expect(run.result()).rejects.toThrow(CancelledError);
    const requests = (await events(engine, 'sleepy-1')).filter((e) => e.type === 'run.cancel_requested');
    expect(requests.map((e) => (e.data as { by?: string }).by)).toEqual(['system']);

    const asked = await engine.start(sleepy, {}, { id: 'sleepy-2', timeout: '300ms' });
    await engine.cancel('sleepy-2', { reason: 'not needed' });
    await expect(asked.result()).rejects.toThrow(CancelledError);
    const own = (await events(engine, 'sleepy-2')).filter((e) => e.type === 'run.cancel_requested');
    expect(own.map((e) => e.data)).toEqual([{ reason: 'not needed' }]);
  });

  it('keeps failing a default workflow at its deadline, and refuses an unknown onDeadline', async () => {
    const plain = workflow('plain-deadline', async (ctx) => {
      await ctx.sleep('long', '1h');
    });
    const engine = await engineWith(plain);
    await expect((await engine.start(plain, {}, { id: 'plain-1', timeout: '300ms' })).result()).rejects.toThrow(
      'TimeoutError',
    );
    expect((await events(engine, 'plain-1')).some((e) => e.type === 'run.cancel_requested')).toBe(false);
    expect(() => workflow('bad', { onDeadline: 'later' as 'fail' }, async () => null)).toThrow(ValidationError);
  });
});
