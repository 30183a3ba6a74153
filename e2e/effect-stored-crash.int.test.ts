import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { backends } from '../src/testing/backends.js';
import { runScript } from './child.js';

const child = (...args: string[]) => runScript('e2e/effect-stored-child.ts', ...args);

/**
 * Issue 46 for a stored workflow: an `http_request` step declared `effect` is SIGKILLed at `effect:afterCall`, after
 * its POST was answered and before the answer was journaled. The next process sends the configured reconcile GET
 * (with the step's Idempotency-Key) instead of the POST: the service saw one POST, and the step's output is the GET's.
 */
describe.each(backends)('a stored http_request effect killed between its call and its record on $name', (backend) => {
  let mock: MockServices;
  beforeAll(async () => {
    mock = await startMockServices();
  });
  afterAll(() => mock.close());

  it('is reconciled by its GET: one POST at the service, the output the reconciled answer', async () => {
    mock.reset();
    const database = await backend.create();
    const out = join(mkdtempSync(join(tmpdir(), 'runledger-effect-stored-')), 'record.json');
    const killed = await child(database, mock.url, out, 'effect:afterCall');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const posts = () => mock.calls({ method: 'POST', path: '/v1/intake/sessions' });
    expect(posts()).toHaveLength(1);
    const finished = await child(database, mock.url, out);
    expect(finished.code, finished.stderr).toBe(0);
    expect(posts()).toHaveLength(1);
    const key = posts()[0]!.idempotency_key;

    const record = JSON.parse(readFileSync(out, 'utf8'));
    expect(record.status).toBe('success');
    const step = record.steps.find((s: { step_id: string }) => s.step_id === 'open');
    expect(step.output).toMatchObject({ status: 200, body: { call: { method: 'POST', idempotency_key: key } } });
    const engine = await createEngine({ database });
    try {
      const types = (await engine.journal.readStream(`run:${record.execution_id ?? record.id}`)).map((e) => e.type);
      expect(types.filter((t) => ['step.intent', 'step.unknown', 'step.reconciled'].includes(t))).toEqual([
        'step.intent',
        'step.unknown',
        'step.reconciled',
      ]);
    } finally {
      await engine.close();
    }
  }, 60_000);
});
