import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { askCancel, type Interruptible, TERMINAL_REASON, whileInterruptible } from './run-interrupt.js';

function harness(terminal: boolean) {
  const input = new PassThrough();
  const prompt = new PassThrough();
  const asked: string[] = [];
  prompt.on('data', (chunk: Buffer) => asked.push(chunk.toString()));
  const lines: string[] = [];
  const calls = { cancel: 0, exit: [] as number[] };
  let finish!: (value: string) => void;
  const waiting = new Promise<string>((resolve) => (finish = resolve));
  const how: Interruptible = {
    terminal,
    input,
    prompt,
    line: (text) => lines.push(text),
    cancel: async () => {
      calls.cancel += 1;
    },
    followCommand: 'runledger events ex_1 --follow',
    exit: (code) => {
      calls.exit.push(code);
      finish('exited');
    },
  };
  return { input, asked, lines, calls, finish, run: () => whileInterruptible(how, () => waiting) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('askCancel', () => {
  it('is yes for y or yes only', async () => {
    for (const [typed, yes] of [
      ['y\n', true],
      ['YES\n', true],
      ['\n', false],
      ['n\n', false],
      ['maybe\n', false],
    ] as const) {
      const input = new PassThrough();
      const output = new PassThrough();
      const answer = askCancel(input, output);
      input.end(typed);
      expect(await answer, typed).toBe(yes);
      expect(output.read().toString()).toContain('cancel the run? [y/N]');
    }
  });

  it('is no when the input ends or the question is taken back', async () => {
    const input = new PassThrough();
    const answer = askCancel(input, new PassThrough());
    input.end();
    expect(await answer).toBe(false);
    const back = new AbortController();
    const taken = askCancel(new PassThrough(), new PassThrough(), back.signal);
    back.abort();
    expect(await taken).toBe(false);
  });
});

describe('Ctrl-C while --wait follows a run', () => {
  it('at a terminal: y cancels with the terminal reason and keeps waiting for the end', async () => {
    const h = harness(true);
    const before = process.listenerCount('SIGINT');
    const done = h.run();
    process.emit('SIGINT');
    await tick();
    expect(h.asked.join('')).toContain('cancel the run? [y/N]');
    h.input.write('y\n');
    await tick();
    expect(h.calls.cancel).toBe(1);
    expect(h.lines).toEqual([`cancelling (${TERMINAL_REASON}); waiting for it to end…`]);
    expect(h.calls.exit).toEqual([]);
    h.finish('cancelled');
    expect(await done).toBe('cancelled');
    expect(process.listenerCount('SIGINT')).toBe(before);
  });

  it('at a terminal: Enter detaches, printing how to follow the run; nothing is cancelled', async () => {
    const h = harness(true);
    const done = h.run();
    process.emit('SIGINT');
    await tick();
    h.input.write('\n');
    expect(await done).toBe('exited');
    expect(h.calls).toEqual({ cancel: 0, exit: [130] });
    expect(h.lines).toEqual(['detached: the run goes on. follow it:  runledger events ex_1 --follow']);
  });

  it('without a terminal: detaches at once, asking nothing', async () => {
    const h = harness(false);
    const done = h.run();
    process.emit('SIGINT');
    expect(await done).toBe('exited');
    expect(h.asked).toEqual([]);
    expect(h.calls).toEqual({ cancel: 0, exit: [130] });
  });

  it('a second Ctrl-C during the question detaches; a run that ends meanwhile takes the question back', async () => {
    const h = harness(true);
    const done = h.run();
    process.emit('SIGINT');
    await tick();
    process.emit('SIGINT');
    expect(await done).toBe('exited');
    expect(h.calls.exit).toEqual([130]);

    const quiet = harness(true);
    const ends = quiet.run();
    process.emit('SIGINT');
    await tick();
    quiet.finish('success');
    expect(await ends).toBe('success');
    quiet.input.write('\n');
    await tick();
    expect(quiet.calls).toEqual({ cancel: 0, exit: [] });
  });
});
