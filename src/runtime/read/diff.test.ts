import { describe, expect, it } from 'vitest';
import { alignSteps, diffRuns } from './diff.js';
import type { RunView, StepView } from './view.js';

function step(seq: number | string, name: string, more: Partial<StepView> = {}): StepView {
  return {
    seq,
    name,
    status: 'success',
    attempts: 1,
    startedAt: 1_000,
    finishedAt: 1_010,
    durationMs: 10,
    input: null,
    output: name,
    error: null,
    ...more,
  };
}

function run(steps: StepView[], more: Partial<RunView> = {}): RunView {
  return {
    id: 'r',
    workflow: 'checkout',
    version: 'v1',
    status: 'success',
    input: { order: 1 },
    output: { ok: true },
    error: null,
    compensations: null,
    steps,
    createdAt: 1_000,
    updatedAt: 2_000,
    ...more,
  };
}

const names = (pairs: ReturnType<typeof alignSteps>) => pairs.map(([x, y]) => `${x?.name ?? '-'}:${y?.name ?? '-'}`);

describe('alignSteps', () => {
  it('pairs steps by name in call order, a step of one run only against nothing', () => {
    const a = [step(1, 'load'), step(2, 'charge'), step(3, 'ship')];
    const b = [step(1, 'load'), step(2, 'check'), step(3, 'charge'), step(4, 'notify'), step(5, 'ship')];
    expect(names(alignSteps(a, b))).toEqual(['load:load', '-:check', 'charge:charge', '-:notify', 'ship:ship']);
    expect(names(alignSteps(b, a))).toEqual(['load:load', 'check:-', 'charge:charge', 'notify:-', 'ship:ship']);
  });

  it('pairs a step called in a loop call by call, and a replaced step as removed then added', () => {
    const a = [step(1, 'page'), step(2, 'page'), step(3, 'page'), step(4, 'sleep')];
    const b = [step(1, 'page'), step(2, 'page'), step(3, 'nap')];
    expect(names(alignSteps(a, b))).toEqual(['page:page', 'page:page', 'page:-', 'sleep:-', '-:nap']);
  });

  it('tells steps of the same name in different parallel branches apart', () => {
    const a = [step('1.en.1', 'fetch'), step('1.fr.1', 'fetch')];
    const b = [step('1.fr.1', 'fetch')];
    expect(alignSteps(a, b).map(([x, y]) => [x?.seq ?? null, y?.seq ?? null])).toEqual([
      ['1.en.1', null],
      ['1.fr.1', '1.fr.1'],
    ]);
  });

  it('aligns two runs with nothing in common, and two without steps', () => {
    expect(names(alignSteps([step(1, 'a')], [step(1, 'b')]))).toEqual(['a:-', '-:b']);
    expect(alignSteps([], [])).toEqual([]);
  });

  it('keeps the common ends of very long runs paired, and shows a middle too long to align as removed then added', () => {
    const many = (name: string) => Array.from({ length: 1_500 }, (_, i) => step(i + 2, `${name}${i % 7}`));
    const a = [step(1, 'start'), ...many('x'), step(9_999, 'end')];
    const b = [step(1, 'start'), ...many('y'), step(9_999, 'end')];
    const pairs = names(alignSteps(a, b));
    expect(pairs).toHaveLength(2 + 3_000);
    expect([pairs[0], pairs[1], pairs[1_501], pairs.at(-1)]).toEqual(['start:start', 'x0:-', '-:y0', 'end:end']);
  });
});

describe('diffRuns', () => {
  it('says what differs between a failed run and its retry that succeeded, step by step', () => {
    const failed = run(
      [
        step(1, 'load', { output: { items: 2 } }),
        step(2, 'charge', { status: 'failed', attempts: 3, output: null, error: 'card declined' }),
      ],
      { status: 'failed', output: null, error: 'card declined' },
    );
    const retried = run([
      step(1, 'load', { output: { items: 2 } }),
      step(2, 'charge', { output: { receipt: 'r-1' } }),
      step(3, 'ship'),
    ]);
    const diff = diffRuns(failed, retried);
    expect(diff.differs).toEqual(['status', 'output', 'error']);
    expect(diff.steps.map((s) => [s.name, s.change, s.differs])).toEqual([
      ['load', 'same', []],
      ['charge', 'changed', ['status', 'attempts', 'output', 'error']],
      ['ship', 'added', []],
    ]);
    expect(diff.steps[2]).toMatchObject({ a: null, b: { name: 'ship' } });
  });

  it('compares values as JSON (key order is not a difference), and the workflow, version and state', () => {
    const a = run([step(1, 'x', { input: { a: 1, b: [1, 2] } })], { state: 'paid' });
    const b = run([step(1, 'x', { input: { b: [1, 2], a: 1 } })], { workflow: 'other', version: 'v2' });
    const diff = diffRuns(a, b);
    expect(diff.differs).toEqual(['workflow', 'version', 'state']);
    expect(diff.steps[0]!.change).toBe('same');
    expect(
      diffRuns(a, run([step(1, 'x', { input: { a: 2, b: [1, 2] } })], { state: 'paid' })).steps[0]!.differs,
    ).toEqual(['input']);
  });

  it('counts a duration as different only when it doubled (or halved) and moved by 100 ms or more', () => {
    const took = (ms: number | null) => diffRuns(run([step(1, 'x')]), run([step(1, 'x', { durationMs: ms })]));
    expect(took(50).steps[0]!.differs).toEqual([]);
    expect(took(19).steps[0]!.differs).toEqual([]);
    expect(took(110).steps[0]!.differs).toEqual(['duration']);
    expect(took(null).steps[0]!.differs).toEqual(['duration']);
    expect(diffRuns(run([]), run([], { updatedAt: 2_400 })).differs).toEqual([]);
    expect(diffRuns(run([]), run([], { updatedAt: 4_000 })).differs).toEqual(['duration']);
    expect(diffRuns(run([]), run([], { status: 'running' })).differs).toEqual(['status', 'duration']);
  });

  it('does not compare the input or duration of a step a rerun reused (it did no work), but still its output', () => {
    const original = run([step(1, 'layout', { input: { doc: 1 }, durationMs: 5_000 })]);
    const reused = run([step(1, 'layout', { input: { reused_from: 'ex_1' }, durationMs: 0 })]);
    expect(diffRuns(original, reused).steps[0]!.change).toBe('same');
    const other = run([step(1, 'layout', { input: { reused_from: 'ex_1' }, output: 'changed' })]);
    expect(diffRuns(original, other).steps[0]!.differs).toEqual(['output']);
  });
});
