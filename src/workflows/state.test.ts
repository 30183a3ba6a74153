import { describe, expect, it } from 'vitest';
import { StepTimedOutError, TerminalError, TimeoutError } from '../errors.js';
import { describeCondition, holds, readPath } from './steps/condition.js';
import { failureState, matches } from './state.js';

const withStatus = (status: number) => Object.assign(new TerminalError(`failed: ${status}`), { status });

describe('error rules and failure states', () => {
  it('match a status, a class, a range, a timeout, or anything', () => {
    expect(matches({ status: 422, state: 'A' }, withStatus(422))).toBe(true);
    expect(matches({ status: 422, state: 'A' }, withStatus(400))).toBe(false);
    expect(matches({ status: '4xx', state: 'A' }, withStatus(404))).toBe(true);
    expect(matches({ status: '5xx', state: 'A' }, withStatus(404))).toBe(false);
    expect(matches({ status: [500, 504], state: 'A' }, withStatus(503))).toBe(true);
    expect(matches({ status: '4xx', state: 'A' }, new Error('connection refused'))).toBe(false);
    expect(matches({ timed_out: true, state: 'A' }, new StepTimedOutError('poll'))).toBe(true);
    expect(matches({ timed_out: true, state: 'A' }, new TimeoutError('run'))).toBe(true);
    expect(matches({ timed_out: true, state: 'A' }, withStatus(504))).toBe(false);
    expect(matches({ state: 'A' }, new Error('x'))).toBe(true);
  });

  it('take the step rules first, then the workflow rules, then the fallback', () => {
    const step = [{ status: 422, state: 'FAILED_CONTENT_VALIDATION' } as const];
    const workflow = [{ timed_out: true, state: 'TIMED_OUT' } as const];
    expect(failureState(withStatus(422), [step, workflow], 'FAILED')).toBe('FAILED_CONTENT_VALIDATION');
    expect(failureState(new StepTimedOutError('x'), [step, workflow], 'FAILED')).toBe('TIMED_OUT');
    expect(failureState(withStatus(500), [step, workflow], 'FAILED')).toBe('FAILED');
    expect(failureState(withStatus(500), [step, undefined], undefined)).toBeNull();
  });
});

describe('conditions on a JSON path', () => {
  const response = { status: 200, body: { status: 'complete', jobs: [{ state: 'done' }], error: null } };
  it('read paths with fields and indexes, own properties only', () => {
    expect(readPath(response, 'body.jobs[0].state')).toBe('done');
    expect(readPath(response, 'body.missing.x')).toBeUndefined();
    expect(readPath(response, 'body.status.length')).toBeUndefined();
    expect(readPath({}, 'constructor')).toBeUndefined();
  });

  it('hold on equals (deep), in, and exists', () => {
    expect(holds({ path: 'body.status', equals: 'complete' }, response)).toBe(true);
    expect(holds({ path: 'body.jobs', equals: [{ state: 'done' }] }, response)).toBe(true);
    expect(holds({ path: 'body.status', in: ['failed', 'cancelled'] }, response)).toBe(false);
    expect(holds({ path: 'body.jobs[0].state', in: ['done'] }, response)).toBe(true);
    expect(holds({ path: 'body.error', exists: true }, response)).toBe(false);
    expect(holds({ path: 'body.nothing', exists: false }, response)).toBe(true);
    expect(describeCondition({ path: 'body.status', equals: 'x' }, response)).toBe('body.status = "complete"');
  });
});
