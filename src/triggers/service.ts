import type { Engine } from '../engine.js';
import type { Subscriber } from '../journal/subscription.js';
import type { Store } from '../storage/store.js';
import { eventsRetention } from './retention.js';
import { EVENT_RECEIVED, EVENT_STREAM_PREFIX, Events } from './events.js';
import { Rules } from './rules.js';
import { EVENT_WAITS_SUBSCRIPTION, EVENT_WAITS_TYPES, EventWaits } from './waits.js';
import { Schedules } from './schedules.js';
import { Scheduler, type SchedulerOptions } from './scheduler.js';
import type { RunStarter } from './target.js';

/** The durable subscription that routes stored events by the rules. */
export const ROUTING_SUBSCRIPTION = 'triggers.rules';

export interface TriggerOptions {
  starter: RunStarter;
  /** Run the routing subscription in this process (default true). */
  routingEnabled?: boolean;
  /** Run a scheduler in this process (default true); any number of processes may. */
  schedulerEnabled?: boolean;
  scheduler?: Omit<SchedulerOptions, 'onError'>;
  /** Failures of routing attempts and firings; they are retried (routing: then parked). */
  onError?: (error: unknown) => void;
}

export interface TriggerService {
  events: Events;
  rules: Rules;
  schedules: Schedules;
  /** Starts the routing subscription and the scheduler (as enabled). */
  start(): Promise<void>;
  /** Stops both; stored events wait for the next start (here or in another process). */
  stop(): Promise<void>;
}

/**
 * Events in, runs out: inbound events, the rules that route them, cron schedules, kept in the
 * engine's `store`. Call once per engine (it registers projections). Routing is a durable
 * subscription over `event:` streams, so an event stored while no process routes is routed when
 * one starts, exactly once.
 *
 * @example
 * const service = triggers(engine, store, { starter: createRunStarter({ engine, store, workflows, codeWorkflows: [onboard] }) });
 * await service.start();
 * await service.rules.create({ name: 'signup', pattern: { 'detail-type': ['user.created'] }, target: { workflow: 'onboard' } });
 * await service.events.put([{ source: 'app', 'detail-type': 'user.created', detail: { id: 'u1' } }]);
 */
export function triggers(engine: Engine, store: Store, options: TriggerOptions): TriggerService {
  const events = new Events(store, engine.journal);
  const rules = new Rules(store, engine.journal, options.starter);
  const schedules = new Schedules(store, engine.journal, options.starter);
  engine.retention.register(eventsRetention());
  let routing: Subscriber | null = null;
  let matching: Subscriber | null = null;
  let scheduler: Scheduler | null = null;
  return {
    events,
    rules,
    schedules,
    async start() {
      if (options.routingEnabled !== false && !routing) {
        const waits = new EventWaits(engine, engine.journal);
        matching = await engine.subscribe(
          EVENT_WAITS_SUBSCRIPTION,
          {
            types: EVENT_WAITS_TYPES,
            // only waits with a match and runs with cancelOn are indexed: the rest pass by unread
            filter: (e) =>
              e.type === EVENT_RECEIVED ||
              (e.data as { match?: unknown; cancelOn?: unknown }).match !== undefined ||
              (e.data as { cancelOn?: unknown }).cancelOn !== undefined,
            ordered: true,
            from: 'beginning',
            ...(options.onError ? { onError: options.onError } : {}),
          },
          (event, { tx }) => waits.handle(event, tx),
        );
        routing = await engine.subscribe(
          ROUTING_SUBSCRIPTION,
          {
            streamPrefix: EVENT_STREAM_PREFIX,
            types: [EVENT_RECEIVED],
            from: 'beginning',
            ...(options.onError ? { onError: options.onError } : {}),
          },
          async (event, { tx }) => void (await rules.route(event, tx)),
        );
      }
      if (options.schedulerEnabled !== false && !scheduler) {
        scheduler = new Scheduler(store, engine.journal, schedules, {
          ...options.scheduler,
          ...(options.onError ? { onError: options.onError } : {}),
        });
        await scheduler.start();
      }
    },
    async stop() {
      await Promise.all([routing?.stop(), matching?.stop(), scheduler?.stop()]);
      routing = null;
      matching = null;
      scheduler = null;
    },
  };
}
