import type { Callbacks } from './callbacks.js';
import type { CallLog } from './calls.js';
import { parseRules, type Faults } from './faults.js';
import { json, type MockRoute } from './http.js';

export interface ControlParts {
  faults: Faults;
  calls: CallLog;
  callbacks: Callbacks;
  endpoints: () => { method: string; path: string; summary: string }[];
  reset(): void;
}

/** The knobs of a test or a person: fault rules, the call log, callbacks sent, reset. Never logged, never faulted. */
export function controlRoutes(parts: ControlParts): MockRoute[] {
  return [
    {
      method: 'GET',
      path: '/',
      summary: 'this list of endpoints',
      handle: () => json(200, { endpoints: parts.endpoints() }),
    },
    {
      method: 'GET',
      path: '/_faults',
      summary: 'the active fault rules, with remaining uses',
      handle: () => json(200, { faults: parts.faults.list() }),
    },
    {
      method: 'POST',
      path: '/_faults',
      summary: 'add fault rules (one rule, a list, or { rules: [...] }) → 201 with their ids',
      handle: (request) => json(201, { faults: parts.faults.add(parseRules(request.body)) }),
    },
    {
      method: 'PUT',
      path: '/_faults',
      summary: 'replace every fault rule',
      handle(request) {
        const rules = parseRules(request.body);
        parts.faults.clear();
        return json(200, { faults: parts.faults.add(rules) });
      },
    },
    {
      method: 'DELETE',
      path: '/_faults',
      summary: 'remove every fault rule',
      handle() {
        parts.faults.clear();
        return json(200, { faults: [] });
      },
    },
    {
      method: 'GET',
      path: '/_calls',
      summary: 'the call log, oldest first (?method=POST&path=/v1/render/jobs/{id} to filter)',
      handle: (request) =>
        json(200, {
          calls: parts.calls.list({
            method: request.query.get('method') ?? undefined,
            path: request.query.get('path') ?? undefined,
          }),
        }),
    },
    {
      method: 'GET',
      path: '/_effects',
      summary: 'whether a request with this Idempotency-Key (header) was done: 200 with its first 2xx call, or 404',
      handle(request) {
        const key = request.headers['idempotency-key'];
        const done = parts.calls.list().find((c) => c.idempotency_key === key && !c.replayed && ok(c.status));
        return done
          ? json(200, { call: done })
          : json(404, { error: { code: 'not_found', message: `no call of ${key}` } });
      },
    },
    {
      method: 'DELETE',
      path: '/_calls',
      summary: 'empty the call log',
      handle() {
        parts.calls.clear();
        return { status: 204 };
      },
    },
    {
      method: 'GET',
      path: '/_callbacks',
      summary: 'the callbacks sent and how their attempts went',
      handle: () => json(200, { callbacks: parts.callbacks.list() }),
    },
    {
      method: 'POST',
      path: '/_reset',
      summary: 'forget everything: resources, idempotency keys, faults, calls, callbacks; the seed starts over',
      handle() {
        parts.reset();
        return { status: 204 };
      },
    },
  ];
}

const ok = (status: number | null) => status !== null && status >= 200 && status < 300;
