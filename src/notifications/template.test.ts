import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { notifyEventOf } from './events.js';
import { checkBody, renderBody } from './template.js';

const problem = (body: unknown) => {
  try {
    checkBody(body);
  } catch (error) {
    if (error instanceof ValidationError) return error.problems[0];
    throw error;
  }
  return undefined;
};

describe("a notification's body template", () => {
  const scope = {
    event: { type: 'run.failed', delivery_id: 'dlv_1' },
    run: { id: 'run_1', workflow: 'checkout', error: 'card declined', output: { items: [1, 2] } },
  };

  it('renders {{event.*}} and {{run.*}}, a lone expression keeping its type', () => {
    const body = {
      text: 'Run {{run.id}} of *{{ run.workflow | upper }}* failed: {{run.error}}',
      blocks: [{ kind: '{{event.type}}', items: '{{run.output.items}}' }],
      fixed: 3,
    };
    expect(checkBody(body)).toBe(body);
    expect(renderBody(body, scope)).toEqual({
      text: 'Run run_1 of *CHECKOUT* failed: card declined',
      blocks: [{ kind: 'run.failed', items: [1, 2] }],
      fixed: 3,
    });
  });

  it('renders what the event lacks as null, or its default', () => {
    const body = { run: '{{run.id}}', named: "{{run.id | default('none')}}" };
    expect(renderBody(body, { event: { type: 'task.dead' }, run: null })).toEqual({ run: null, named: 'none' });
  });

  it('sends the event and its run without a body', () => {
    expect(renderBody(null, scope)).toEqual({ ...scope.event, run: scope.run });
  });

  it('refuses, naming the field, a template that does not parse or reads another root', () => {
    expect(problem({ a: { b: ['x', '{{run.id | shout}}'] } })).toEqual({
      path: 'body.a.b[1]',
      message: "{{run.id | shout}}: unknown filter 'shout'",
    });
    expect(problem({ text: '{{secrets.token}}' })?.path).toBe('body.text');
    expect(problem({ text: '{{trigger.event.type}}' })?.message).toMatch(/reads only event\.\* and run\.\*/);
    expect(problem({ text: '{{steps.a.output}}' })?.message).toMatch(/reads only event\.\* and run\.\*/);
    expect(problem({ text: '{{event}}' })).toBeUndefined();
    expect(problem({ text: 'Run {{run.id' })?.path).toBe('body.text');
  });
});

describe('the notification event of a journal event', () => {
  const at = (streamId: string, type: string, data: unknown = {}) =>
    notifyEventOf({ position: 1, streamId, version: 1, type, data, metadata: {}, timestamp: 0 });

  it('maps run endings, approval waits, dead tasks and runs started with a deadline', () => {
    expect(at('run:r1', 'run.failed')).toBe('run.failed');
    expect(at('run:r1', 'run.completed')).toBe('run.succeeded');
    expect(at('run:r1', 'wait.started', { name: 'approval:abc' })).toBe('approval.waiting');
    expect(at('run:r1', 'wait.started', { name: 'payment' })).toBeNull();
    expect(at('run:r1', 'run.started', { deadline: 5 })).toBe('run.timeout_warning');
    expect(at('run:r1', 'run.started', { deadline: null })).toBeNull();
    expect(at('task:t1', 'task.dead')).toBe('task.dead');
    expect(at('other:x', 'run.failed')).toBeNull();
  });
});
