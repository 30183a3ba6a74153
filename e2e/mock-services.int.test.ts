import { describe, expect, it } from 'vitest';
import { eventually } from '../src/testing/engine.js';
import { cli } from './child.js';

describe('runledger mock-services', () => {
  it('prints its URL and endpoints, answers, and stops on SIGTERM', async () => {
    const mock = cli(['mock-services', '--port', '0', '--speed', '50', '--seed', '42']);
    try {
      const url = await eventually(
        () => /listening on (http:\/\/\S+) \(speed 50, seed 42\)/.exec(mock.output())?.[1],
        20_000,
      );
      await eventually(() => mock.output().includes('POST   /v1/render/presentations'));
      expect(mock.output()).toContain('DELETE /v1/intake/sessions/{session_id}');
      const created = await fetch(`${url}/v1/intake/sessions`, {
        method: 'POST',
        headers: { 'idempotency-key': 'cli' },
        body: JSON.stringify({ content: 'hello' }),
      });
      expect(created.status).toBe(201);
      expect(((await created.json()) as { status: string }).status).toBe('draft');
      const calls = (await (await fetch(`${url}/_calls`)).json()) as { calls: { idempotency_key: string }[] };
      expect(calls.calls.map((c) => c.idempotency_key)).toEqual(['cli']);
      await eventually(() => / POST \/v1\/intake\/sessions → 201 {2}key=cli\n/.test(mock.output()));
      mock.proc.kill('SIGTERM');
      expect(await mock.exited).toEqual({ code: 0, signal: null });
      expect(mock.output()).toContain('mock services: stopped');
    } finally {
      mock.proc.kill('SIGKILL');
    }
  });

  it('refuses a bad option with a message', async () => {
    const bad = cli(['mock-services', '--port', '0', '--speed', 'fast']);
    expect((await bad.exited).code).toBe(1);
    expect(bad.output()).toMatch(/speed must be a number/);
  });
});
