import { describe, expect, it } from 'vitest';
import { output, plural } from './output.js';
import { dueAt } from './timeline.js';

const capture = (colour: boolean) => {
  let text = '';
  return { out: output((t) => (text += t), colour), text: () => text };
};

describe('what the CLI prints', () => {
  it('prints a table under a header row, padded, and a sentence when there are no rows', () => {
    const { out, text } = capture(false);
    out.table(
      ['ID', 'STATUS', 'ERROR'],
      [
        ['ex_1', 'success', ''],
        ['ex_22', 'failed', 'boom'],
      ],
      'no runs yet',
    );
    out.table(['ID'], [], 'no dead tasks');
    expect(text()).toBe('ID     STATUS   ERROR\nex_1   success\nex_22  failed   boom\nno dead tasks\n');
  });

  it('colours statuses on a terminal only, and pads by the visible width', () => {
    const plain = capture(false);
    expect(plain.out.status('failed')).toBe('failed');
    const tty = capture(true);
    expect(tty.out.status('failed')).toBe('\x1b[31mfailed\x1b[0m');
    expect(tty.out.status('success')).toBe('\x1b[32msuccess\x1b[0m');
    expect(tty.out.status('something-else')).toBe('something-else');
    tty.out.table(
      ['S', 'X'],
      [
        [tty.out.status('failed'), 'x'],
        ['ok', 'y'],
      ],
      '',
    );
    // eslint-disable-next-line no-control-regex
    // biome-ignore lint/suspicious/noControlCharactersInRegex: strips the ANSI colour codes
    expect(tty.text().replace(/\x1b\[[0-9;]*m/g, '')).toBe('S       X\nfailed  x\nok      y\n');
  });

  it('says one step, two steps', () => {
    expect([0, 1, 2].map((n) => plural(n, 'step'))).toEqual(['0 steps', '1 step', '2 steps']);
    expect(plural(1, 'entry', 'entries')).toBe('1 entry');
  });

  it('says when a retry is due, and in how long', () => {
    const now = Date.parse('2026-01-01T10:00:00.000Z');
    expect(dueAt(now + 4_000, now)).toBe('10:00:04 (in 4s)');
    expect(dueAt(now + 600_000, now)).toBe('10:10:00 (in 10m)');
  });
});
