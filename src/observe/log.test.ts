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
