import type { Journal } from '../journal/journal.js';
import type { EngineEvents } from '../observe/events.js';
import { RUN_EVENT } from './events.js';

/**
 * Reports flow control's journal events to the engine's events once their append commits (never for one rolled
 * back): a step told to wait for a named rate limit (`flow:rate_wait`), a start that joined an open debounce window
 * (`flow:debounced`: a `run.debounced` carrying an input; the window's first carries none) and a budget passed or
 * decided (`flow:budget`). Counted where the journal is written, so every writer of these events is seen.
 *
 * @example observeFlow(engine.journal, engine.events); engine.on('flow:budget', (e) => console.log(e.decision))
 */
export function observeFlow(journal: Journal, events: EngineEvents): void {
  journal.project(RUN_EVENT.stepRateWaiting, async (event, tx) => {
    const limit = (event.data as { limit?: unknown }).limit;
    if (typeof limit === 'string')
      tx.onCommit(() => events.emit('flow:rate_wait', { runId: runOf(event.streamId), limit }));
  });
  journal.project(RUN_EVENT.runDebounced, async (event, tx) => {
    if (event.data !== null && typeof event.data === 'object' && 'input' in event.data)
      tx.onCommit(() => events.emit('flow:debounced', { runId: runOf(event.streamId) }));
  });
  journal.project([RUN_EVENT.budgetExceeded, RUN_EVENT.budgetDecided], async (event, tx) => {
    const decision =
      event.type === RUN_EVENT.budgetExceeded
        ? 'exceeded'
        : (event.data as { decision?: unknown }).decision === 'approve'
          ? 'approved'
          : 'rejected';
    tx.onCommit(() => events.emit('flow:budget', { runId: runOf(event.streamId), decision }));
  });
}

/** The run id of a run's stream (`run:<id>`). */
function runOf(streamId: string): string {
  return streamId.startsWith('run:') ? streamId.slice(4) : streamId;
}
