import type { ScheduleView } from '../triggers/schedules.js';
import { Client } from './client.js';

const enc = encodeURIComponent;

/** A schedule as the API answers it (`GET /schedules/{id}`): its definition, next three slots and state. */
export type ScheduleRecord = Omit<ScheduleView, 'state'> & { state: Omit<ScheduleView['state'], 'last_slot_ms'> };

/** A run a backfill started (or found: a slot keeps the run it has). */
export interface BackfilledRun {
  slot: string;
  run_id: string;
  kind: 'execution' | 'workflow' | 'session';
}

/**
 * The schedule routes (`/schedules…`) on a running server, beside everything `Client` reaches.
 *
 * @example
 * const c = new ScheduleClient({ url: 'http://127.0.0.1:8080' });
 * const s = await c.createSchedule({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', target: { workflow: 'wf_01J…' } });
 * await c.pauseSchedule(s.id);
 */
export class ScheduleClient extends Client {
  createSchedule = (body: Record<string, unknown>) => this.call<ScheduleRecord>('POST', '/schedules', body);
  schedules = (page: { limit?: number; last_key?: string } = {}) => {
    const params = new URLSearchParams(Object.entries(page).map(([k, v]) => [k, String(v)]));
    const query = params.size > 0 ? `?${params}` : '';
    return this.call<{ schedules: ScheduleRecord[]; count: number; last_key: string | null }>(
      'GET',
      `/schedules${query}`,
    );
  };
  schedule = (id: string) => this.call<ScheduleRecord>('GET', `/schedules/${enc(id)}`);
  /** Replaces the schedule's definition (every field as `createSchedule` takes them); its id, state and pause stay. */
  updateSchedule = (id: string, body: Record<string, unknown>) =>
    this.call<ScheduleRecord>('PUT', `/schedules/${enc(id)}`, body);
  pauseSchedule = (id: string) => this.call<ScheduleRecord>('POST', `/schedules/${enc(id)}/pause`);
  resumeSchedule = (id: string) => this.call<ScheduleRecord>('POST', `/schedules/${enc(id)}/resume`);
  deleteSchedule = (id: string) => this.call<null>('DELETE', `/schedules/${enc(id)}`);
  /** A run for each slot with `from` ≤ slot < `to` (ISO 8601), at most 100. */
  backfillSchedule = (id: string, window: { from: string; to: string }) =>
    this.call<{ runs: BackfilledRun[] }>('POST', `/schedules/${enc(id)}/backfill`, window);
  /** A cron expression's next ten slots in a time zone; nothing is saved. */
  previewSchedule = (cron: string, timezone?: string) =>
    this.call<{ next: string[] }>('POST', '/schedules/preview', { cron, ...(timezone ? { timezone } : {}) });
}
