import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { offlineModel } from '../src/models/offline.js';
import { workflow } from '../src/runtime/workflow.js';
import { backends } from '../src/testing/backends.js';
import { checkJournal } from './check.js';

const twoSteps = workflow('two-steps', async (ctx, input: { n: number }) => {
  const a = await ctx.step('a', async () => input.n + 1);
  await ctx.sleep('nap', '10ms');
  const b = await ctx.step('b', async () => a * 2);
  // a model call: its text batches fall inside its attempt
  await ctx.generate('say', { model: offlineModel(), messages: [{ role: 'user', content: `a ${b}` }] });
  return b;
});

describe.each(backends)('the chaos journal checker on $name', (backend) => {
  it('finds nothing wrong with what the engine writes, and names each broken rule in a journal that breaks them', async () => {
    const database = await backend.create();
    const engine = await createEngine({ database, workflows: [twoSteps], pollMs: 50 });
    try {
      const runs = await Promise.all([1, 2, 3].map((n) => engine.start(twoSteps, { n }, { id: `ok-${n}` })));
      for (const run of runs) await run.result({ pollMs: 20 });
      await engine.queue.enqueue('other', { x: 1 });
    } finally {
      await engine.close();
    }
    const clean = await checkJournal(database);
    expect(clean.problems).toEqual([]);
    expect(clean).toMatchObject({ runs: 3 });
    expect(clean.tasks).toBeGreaterThanOrEqual(4);

    // written straight to the journal, as a broken engine would
    const broken = await createEngine({ database, workers: false });
    try {
      const [task] = await broken.queue.list({ queue: 'other', limit: 1 });
      await broken.journal.append(`task:${task!.id}`, [
        { type: 'task.completed', data: { attempt: 1, state: 'completed' } },
      ]);
      await broken.journal.append('run:ok-1', [
        { type: 'step.completed', data: { seq: 1, name: 'a', attempt: 1, output: 2 } },
      ]);
      await broken.journal.append('run:ghost', [
        { type: 'step.started', data: { seq: 0, name: 'a', attempt: 2 } },
        { type: 'step.failed', data: { seq: 0, name: 'a', attempt: 2, retryAt: 1 } },
        { type: 'step.text', data: { seq: 0, name: 'a', attempt: 2, at: 0, text: 'late' } },
      ]);
      await broken.journal.append('session:s-1', [{ type: 'AGENT_INVOCATION_STARTED', data: {} }]);
      await broken.journal.append('channel:c-1', [
        { type: 'message.posted', data: { event_id: 'e-1', metadata: {} } },
        { type: 'message.posted', data: { event_id: 'e-1', metadata: {} } },
      ]);
    } finally {
      await broken.close();
    }
    const { problems } = await checkJournal(database);
    const expected = [
      // a claim is not journaled: the completion stands for one, which the row does not have
      /^task:\S+: its events end in completed, its row is ready$/,
      /^task:\S+: 1 attempts journaled since its last redrive, its row counts 0$/,
      /^run:ok-1 v\d+: step\.completed after run\.completed/,
      /^run:ok-1 seq 1 v\d+: step\.completed after the step completed$/,
      /^run:ok-1 seq 1 v\d+: step\.completed of attempt 1 while attempt 1 is not running$/,
      /^run:ghost: opens with step\.started, not run\.started$/,
      /^run:ghost seq 0 v1: attempt 2 started after attempt 0$/,
      /^run:ghost seq 0 v3: step\.text of attempt 2 outside it \(attempt 2\)$/,
      /^run:ghost: no view$/,
      /^session:s-1 v1: AGENT_INVOCATION_STARTED after \(nothing\)$/,
      /^channel:c-1 v2: event_id e-1 again \(first at v1\)$/,
    ];
    for (const pattern of expected) {
      expect(
        problems.filter((p) => pattern.test(p)),
        `${pattern} in\n${problems.join('\n')}`,
      ).toHaveLength(1);
    }
    expect(problems).toHaveLength(expected.length);
  }, 60_000);
});
