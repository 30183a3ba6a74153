import { RUN_EVENT } from '../../../src/runtime/events.js';
import type { JournalEvent } from './gantt';

/** A row of the run page's journal: one event, or a model call's streamed text batches in a row, as one. */
export interface JournalRow {
  event: JournalEvent;
  /** For text batches: how many, the last one's version, and the text they carry together. */
  text?: { batches: number; last: number; joined: string };
}

/**
 * The journal as the run page lists it: consecutive `step.text` batches of one call's attempt fold into one row (a
 * streamed answer writes one every 50 ms, hundreds for a long one), the text they carry joined; every other event is
 * its own row.
 */
export function journalRows(events: JournalEvent[]): JournalRow[] {
  const rows: JournalRow[] = [];
  for (const event of events) {
    const last = rows.at(-1);
    if (event.type === RUN_EVENT.stepText && last?.text && sameCall(last.event, event)) {
      last.text.batches += 1;
      last.text.last = event.version;
      last.text.joined += String(event.data?.text ?? '');
      continue;
    }
    rows.push(
      event.type === RUN_EVENT.stepText
        ? { event, text: { batches: 1, last: event.version, joined: String(event.data?.text ?? '') } }
        : { event },
    );
  }
  return rows;
}

function sameCall(a: JournalEvent, b: JournalEvent): boolean {
  return a.data?.seq === b.data?.seq && a.data?.attempt === b.data?.attempt;
}
