import type { BatchRecord, BatchStarted } from '../workflows/batches.js';
import { Client } from './client.js';

const enc = encodeURIComponent;

/**
 * The batch routes (brief 004 §15) on a running server, beside everything `Client` reaches.
 *
 * @example
 * const c = new BatchClient({ url: 'http://127.0.0.1:8080' });
 * const { batch_id } = await c.startBatch('import-orders', { inputs: [{ id: 1 }, { id: 2 }] });
 * (await c.batch(batch_id)).status // 'running'
 */
export class BatchClient extends Client {
  startBatch = (workflow: string, body: { inputs: Record<string, unknown>[]; idempotency_key?: string }) =>
    this.call<BatchStarted>('POST', `/workflows/${enc(workflow)}/batches`, body);
  batch = (id: string) => this.call<BatchRecord>('GET', `/batches/${enc(id)}`);
  batches = (q: { limit?: number; last_key?: string } = {}) => {
    const params = new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]));
    const query = params.size > 0 ? `?${params}` : '';
    return this.call<{ batches: BatchRecord[]; count: number; last_key: string | null }>('GET', `/batches${query}`);
  };
  cancelBatch = (id: string, reason?: string) =>
    this.call<{ batch_id: string; cancelled: number }>(
      'POST',
      `/batches/${enc(id)}/cancel`,
      reason === undefined ? {} : { reason },
    );
}
