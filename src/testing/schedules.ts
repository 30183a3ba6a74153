import { randomBytes } from 'node:crypto';
import { storedWorkflows } from '../app/workflows.js';
import type { Engine } from '../engine.js';
import { Scheduler } from '../triggers/scheduler.js';
import { Schedules } from '../triggers/schedules.js';
import { createRunStarter } from '../triggers/starter.js';

/** What one firing of a test engine's due slots came to. */
export interface Firing {
  /** When the next slot of any schedule comes (ms since the epoch), or null when none will. */
  next: number | null;
  /** How many slots this firing dealt with (fired, skipped, failed …): the runs it started may be running now. */
  slots: number;
}

/**
 * The schedules of a test engine and the real scheduler over them, started nowhere: the test engine calls `fire`
 * at each time its clock stands on, so every slot fires at its own time, through the scheduler's own firing code
 * (once per slot, `overlap`, pauses), with no timer of its own. Targets are the engine's code workflows.
 *
 * @example
 * const { schedules, fire } = testSchedules(engine);
 * await schedules.create({ cron: '0 * * * *', target: { workflow: 'report' } });
 * const { next } = await fire(); // nothing due yet: next is the top of the hour
 */
export function testSchedules(engine: Engine): { schedules: Schedules; fire: () => Promise<Firing> } {
  // the starter looks stored workflows up too: the engine gets their service, with a key of its own
  const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
  const starter = createRunStarter({ engine, store: engine.store, workflows });
  const schedules = new Schedules(engine.store, engine.journal, starter);
  const errors: unknown[] = [];
  let slots = 0;
  const scheduler = new Scheduler(engine.store, engine.journal, schedules, {
    onError: (error) => errors.push(error),
    onFire: () => void slots++,
  });
  return {
    schedules,
    async fire() {
      const before = slots;
      const next = await scheduler.fireDue();
      // the real scheduler retries a firing that threw a second later; a test wants to know at once
      if (errors.length > 0) throw errors.splice(0)[0];
      return { next, slots: slots - before };
    },
  };
}
