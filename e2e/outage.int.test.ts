import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { fuzz } from '../chaos/fuzz.js';
import { eventually } from '../src/testing/engine.js';
import { serve, type Served } from './child.js';
import { throwawayPostgres, type ThrowawayPostgres } from './throwaway-postgres.js';

const definition = {
  name: 'after-outage',
  steps: [{ id: 'shape', type: 'transform', config: { mapping: { ok: '{{trigger.ok}}' } } }],
};

describe('a PostgreSQL outage under runledger serve (its own throwaway cluster)', () => {
  let cluster: ThrowawayPostgres | undefined;
  let served: Served | undefined;
  afterEach(() => {
    served?.proc.kill('SIGKILL');
    cluster?.remove();
  });

  it.each(['immediate', 'fast'] as const)(
    'answers 503 with Retry-After and no internal detail while the database is down (stop -m %s), and recovers when it is back',
    { timeout: 120_000 },
    async (mode) => {
      cluster = await throwawayPostgres();
      const admin = new pg.Client({ connectionString: cluster.url });
      await admin.connect();
      await admin.query('CREATE DATABASE runledger');
      await admin.end();
      const database = cluster.url.replace(/\/postgres$/, '/runledger');
      served = await serve(database, [], { RUNLEDGER_POLL_MS: '200', RUNLEDGER_LEASE_MS: '2000' });
      const call = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(`${served!.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await response.text();
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          text,
          body: text === '' ? null : JSON.parse(text),
        };
      };
      const created = await call('POST', '/workflows', definition);
      expect(created.status).toBe(201);

      cluster.stop(mode);
      for (const [method, path, body] of [
        ['GET', '/workflows', undefined],
        ['GET', `/workflows/${created.body.id}`, undefined],
        ['POST', '/workflows', definition],
        ['POST', `/workflows/${created.body.id}/execute`, { trigger_data: { ok: 1 } }],
        ['GET', '/runs', undefined],
        ['POST', '/events', { source: 's', 'detail-type': 't', detail: {} }],
        ['GET', '/healthz', undefined],
      ] as const) {
        const answer = await call(method, path, body);
        expect(answer.status, `${method} ${path}: ${answer.text}`).toBe(503);
        expect(Number(answer.retryAfter), `${method} ${path}`).toBeGreaterThan(0);
        expect(answer.body.error).toEqual({
          code: 'store_unavailable',
          message: 'the database is unavailable; retry later',
        });
        expect(answer.text).not.toMatch(/ECONN|127\.0\.0\.1|5432|:\d{4,5}\b|postgres|terminat/i);
      }
      if (mode === 'immediate') {
        // every route, with bad input too: a 4xx or a 503, never a 500 carrying the driver's error
        const report = await fuzz(served.url, { allowStatuses: [503], maxCasesPerRoute: 4 });
        expect(report.failures).toEqual([]);
        expect(report.statuses['5xx']).toBeGreaterThan(0);
      }
      expect(served.proc.exitCode, served.output()).toBeNull();

      cluster.start();
      const listed = await eventually(async () => {
        const answer = await call('GET', '/workflows');
        return answer.status === 200 ? answer.body : undefined;
      }, 30_000);
      expect(listed.workflows.map((w: { id: string }) => w.id)).toEqual([created.body.id]);
      const { body: execution } = await call('POST', `/workflows/${created.body.id}/execute`, {
        trigger_data: { ok: 'yes' },
      });
      const record = await eventually(async () => {
        const { body } = await call('GET', `/workflows/${created.body.id}/executions/${execution.execution_id}`);
        return body.status === 'success' || body.status === 'failed' ? body : undefined;
      }, 30_000);
      expect(record.status).toBe('success');
      expect(record.steps[0].output).toEqual({ ok: 'yes' });
    },
  );
});
