import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { expect } from 'vitest';
import type { Engine } from '../src/engine.js';
import type { MockServices } from '../src/mock-services/index.js';
import { createApp } from '../src/server/app.js';
import { listen } from '../src/server/listen.js';
import type { Backend } from '../src/testing/backends.js';
import { eventually, testEngine } from '../src/testing/engine.js';
import { storedWorkflows } from '../src/app/workflows.js';

/** One engine and its HTTP app beside running mock services: what a pipeline test drives. */
export interface PipelineHarness {
  engine: Engine;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  save(definition: unknown): Promise<string>;
  execute(workflowId: string, data: object): Promise<string>;
  record(workflowId: string, executionId: string): Promise<any>;
  finished(workflowId: string, executionId: string): Promise<any>;
  count(method: string, path: string): number;
  close(): Promise<void>;
}

export async function pipelineHarness(backend: Backend, mock: MockServices): Promise<PipelineHarness> {
  const t = await testEngine(backend, { pollMs: 100 });
  let handler: Hono | null = null;
  const server = await listen({ fetch: (request) => handler!.fetch(request) }, { host: '127.0.0.1', port: 0 });
  const workflows = storedWorkflows(t.engine, {
    secretKey: randomBytes(32),
    allow: ['127.0.0.1'],
    callbackBaseUrl: server.url,
  });
  const app = createApp({ engine: t.engine, workflows });
  handler = app;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.fetch(
      new Request(`http://api${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const record = async (wid: string, eid: string) => (await call('GET', `/workflows/${wid}/executions/${eid}`)).body;
  return {
    engine: t.engine,
    call,
    record,
    save: async (definition) => {
      const res = await call('POST', '/workflows', definition);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.id as string;
    },
    execute: async (wid, data) => {
      const res = await call('POST', `/workflows/${wid}/execute`, { trigger_data: data });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      return res.body.execution_id as string;
    },
    finished: (wid, eid) =>
      eventually(async () => {
        const body = await record(wid, eid);
        return ['success', 'partial_success', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
      }, 30_000),
    count: (method, path) => mock.calls({ method, path }).length,
    close: async () => {
      await server.close();
      await t.close();
    },
  };
}
