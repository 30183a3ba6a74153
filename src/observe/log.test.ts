import { describe, expect, it } from 'vitest';
import { EngineEvents } from './events.js';
import { createLogger, logEvents, prettyLine } from './log.js';

const capture = () => {
  const lines: string[] = [];
  return { lines, out: { write: (line: string) => lines.push(line) } };
};

describe('logs', () => {
  it('writes one JSON line per lifecycle event with run_id, step and trace_id, secrets masked', () => {
    const { lines, out } = capture();
    const events = new EngineEvents();
    const stop = logEvents(events, createLogger('info', false, out), () => ['hunter2']);
    events.emit('step:fail', {
      runId: 'run_1',
      workflow: 'w',
      step: 'charge',
      attempt: 2,
      durationMs: 5,
      error: 'card hunter2 refused',
      willRetry: true,
      errorClass: '5xx',
      traceId: 'a'.repeat(32),
    });
    events.emit('task:claim', { queue: 'q', taskId: 't1', attempt: 1, workerId: 'w1' });
    events.emit('task:dead', { queue: 'q', taskId: 't1', attempt: 5, error: 'gone' });
    stop();
    events.emit('run:start', { runId: 'run_2', workflow: 'w', kind: 'code' });
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records).toHaveLength(2);
    expect(records[0]).toMatchObject({
      level: 30,
      msg: 'step:fail',
      run_id: 'run_1',
      step: 'charge',
      attempt: 2,
      trace_id: 'a'.repeat(32),
      error: 'card *** refused',
      will_retry: true,
      error_class: '5xx',
    });
    expect(lines.join('')).not.toContain('hunter2');
    expect(records[1]).toMatchObject({ level: 40, msg: 'task:dead', task_id: 't1', queue: 'q' });
  });

  it('logs state transitions at info, and a poll request at debug while pending, at info when retried or ended', () => {
    const { lines, out } = capture();
    const events = new EngineEvents();
    logEvents(events, createLogger('info', false, out));
    const poll = { runId: 'ex_1', workflow: 'docs', step: 'wait', attempt: 1 };
    events.emit('run:state', {
      runId: 'ex_1',
      workflow: 'docs',
      kind: 'execution',
      state: 'LAYOUT_QUEUED',
      from: null,
    });
    events.emit('poll:attempt', { ...poll, outcome: 'pending', status: 'processing', nextDelayMs: 1000 });
    events.emit('poll:attempt', {
      ...poll,
      attempt: 2,
      outcome: 'retrying',
      nextDelayMs: 1500,
      error: 'Error: 503',
      errorClass: '5xx',
    });
    events.emit('poll:attempt', { ...poll, attempt: 3, outcome: 'complete', status: 'complete' });
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records).toMatchObject([
      { level: 30, msg: 'run:state', run_id: 'ex_1', state: 'LAYOUT_QUEUED', from: null },
      { level: 30, msg: 'poll:attempt', attempt: 2, outcome: 'retrying', next_delay_ms: 1500, error_class: '5xx' },
      { level: 30, msg: 'poll:attempt', attempt: 3, outcome: 'complete', status: 'complete' },
    ]);
  });

  it('honours the level, refuses an unknown one, and prints readable lines on a terminal', () => {
    const { lines, out } = capture();
    const events = new EngineEvents();
    logEvents(events, createLogger('debug', true, out));
    events.emit('task:claim', { queue: 'q', taskId: 't1', attempt: 1, workerId: 'w1' });
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} DEBUG task:claim queue=q task_id=t1 attempt=1 worker_id=w1\n$/);
    expect(() => createLogger('loud', false)).toThrow(/RUNLEDGER_LOG_LEVEL/);
    expect(prettyLine('not json')).toBe('not json');
  });
});
