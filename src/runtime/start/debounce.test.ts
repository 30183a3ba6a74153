import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import { History } from '../pass/history.js';
import { apply, newView } from '../read/apply.js';

let version = 0;
const event = (type: string, data: Record<string, unknown>): StoredEvent => ({
  position: ++version,
  streamId: 'run:r1',
  version,
  type,
  data,
  metadata: {} as StoredEvent['metadata'],
  timestamp: 1_000 + version,
});

/** A window's events as a debounced start journals them: the run's start, the window's opening, two later starts. */
function window(mode: 'last' | 'all'): StoredEvent[] {
  version = 0;
  const until = 'debounced until 1970-01-01T00:00:02.000Z';
  return [
    event(RUN_EVENT.runStarted, {
      workflow: 'reply',
      input: mode === 'all' ? [{ n: 1 }] : { n: 1 },
      orderingKey: null,
    }),
    event(RUN_EVENT.runDebounced, { mode, until: 2_000, waitingFor: until }),
    event(RUN_EVENT.runDebounced, { mode, until: 2_000, input: { n: 2 }, waitingFor: until }),
    event(RUN_EVENT.runDebounced, { mode, until: 2_500, input: { n: 3 }, waitingFor: until }),
  ];
}

describe("a debounced run's input", () => {
  it("is the last start's (mode last) or every start's in order (mode all), in History and in the run view alike", () => {
    for (const [mode, expected] of [
      ['last', { n: 3 }],
      ['all', [{ n: 1 }, { n: 2 }, { n: 3 }]],
    ] as const) {
      const events = window(mode);
      expect(new History(events).input).toEqual(expected);
      const view = newView('r1', events[0]!);
      for (const e of events.slice(1)) apply(view, e);
      expect(view.input).toEqual(expected);
      expect(view.status).toBe('waiting');
      expect(view.waitingFor).toBe('debounced until 1970-01-01T00:00:02.000Z');
    }
  });

  it('waits no more once the run has begun', () => {
    const events = window('last');
    const view = newView('r1', events[0]!);
    for (const e of events.slice(1)) apply(view, e);
    apply(view, event(RUN_EVENT.stepStarted, { seq: 1, name: 'reply', attempt: 1 }));
    expect(view.status).toBe('running');
    expect(view.waitingFor ?? null).toBeNull();
  });
});
