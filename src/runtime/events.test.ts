import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  keyEventTable,
  orderingEventTable,
  RUN_EVENT,
  RUN_EVENT_TYPES,
  runEventTable,
  TERMINAL_RUN_EVENTS,
} from './events.js';

const root = join(import.meta.dirname, '..', '..');

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('run events', () => {
  it('names each type once, with a unique type per name', () => {
    const types = [
      ...Object.values(runEventTable),
      ...Object.values(orderingEventTable),
      ...Object.values(keyEventTable),
    ].map((e) => e.type);
    expect(new Set(types).size).toBe(types.length);
    expect(RUN_EVENT.runCompleted).toBe('run.completed');
    expect(RUN_EVENT_TYPES).toContain('poll.timed_out');
    expect(RUN_EVENT_TYPES).not.toContain('run.queued');
    expect([...TERMINAL_RUN_EVENTS].sort()).toEqual(['run.cancelled', 'run.completed', 'run.failed']);
  });

  it('is the only source file that spells a run event type as a string', () => {
    const types = [
      ...Object.values(runEventTable),
      ...Object.values(orderingEventTable),
      ...Object.values(keyEventTable),
    ].map((e) => e.type);
    const quoted = new RegExp(`['"\`](${types.map((t) => t.replace('.', '\\.')).join('|')})['"\`]`);
    // the dashboard (ui/src) too: it names types through RUN_EVENT, which its bundle imports (events.ts has no imports)
    const offenders = [...sources('src'), ...sources('chaos'), ...sources(join('ui', 'src'))]
      .filter((file) => !file.endsWith(join('runtime', 'events.ts')))
      .flatMap((file) =>
        readFileSync(join(root, file), 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
          // comments may name a type (in backquotes, usually); code may not
          .filter(({ line }) => !/^\s*(\*|\/\/|\/\*)/.test(line) && quoted.test(line))
          .map(({ at }) => at),
      );
    expect(offenders).toEqual([]);
  });

  it('keeps the dashboard from copying the run statuses (RunStatus of runtime/read/view.ts checks its list)', () => {
    const copies = sources(join('ui', 'src')).filter((file) =>
      /RUN_STATUSES\s*=\s*\[/.test(readFileSync(join(root, file), 'utf8')),
    );
    expect(copies).toEqual([]);
  });
});
