import type { Engine } from '../engine.js';
import { RUN_EVENT } from '../runtime/events.js';
import type { Model, ModelMessage } from '../runtime/model.js';
import { runStream } from '../runtime/pass/history.js';
import { FALLBACK_MS } from '../runtime/read/runs.js';
import type { RunView } from '../runtime/read/view.js';
import { runIdFor } from '../runtime/start/keyed.js';
import { workflow, type Workflow } from '../runtime/workflow.js';

/** The workflow each AI reply is generated in: one run per user message (and per failed try), keyed by its event id. */
export const REPLY_WORKFLOW = 'runledger.chat-reply';

/** What a reply's run is started with: the context the model sees, read once when the run starts. */
export interface ReplyRunInput {
  channel_id: string;
  reply_to: string;
  messages: ModelMessage[];
}

/** What a reply's run returns. */
export interface ReplyRunOutput {
  text: string;
  model: string;
}

interface Registered {
  model: Model;
  timeoutMs: number;
}

const registered = new WeakMap<Engine, Registered>();

/**
 * Makes the reply workflow runnable on `engine` with `model` (the last reply worker started on an engine sets it:
 * every process answering one database must give it the same model). Its one step is `ctx.generate('reply')`, tried
 * once per run: a failure fails the run and the reply worker's next try is a new run, as the subscription's backoff
 * and parking decide.
 */
export function registerReplyWorkflow(engine: Engine, model: Model, timeoutMs: number): void {
  const current = registered.get(engine);
  if (current) {
    current.model = model;
    current.timeoutMs = timeoutMs;
    return;
  }
  const state: Registered = { model, timeoutMs };
  registered.set(engine, state);
  const wf: Workflow<ReplyRunInput, ReplyRunOutput> = workflow(
    REPLY_WORKFLOW,
    { version: '1' },
    async (ctx, input: ReplyRunInput) => {
      const { text, usage } = await ctx.generate('reply', {
        model: state.model,
        messages: input.messages,
        retry: { maxAttempts: 1 },
        timeout: state.timeoutMs,
        label: `reply to ${input.reply_to} in ${input.channel_id}`,
      });
      return { text, model: usage.model };
    },
  );
  engine.register(wf);
}

/** The id of the `n`-th run that generates the reply stored as `eventId` (n ≥ 1): the same in every process. */
export function replyRunId(eventId: string, n: number): string {
  return runIdFor(`${REPLY_WORKFLOW}:${eventId}#${n}`);
}

/**
 * The run that answers `eventId` now: the first of its runs that did not fail (`existing`: it was there before this
 * call), or a new one started with `input` after the failed ones.
 */
export async function replyRun(
  engine: Engine,
  eventId: string,
  input: () => ReplyRunInput,
): Promise<{ runId: string; n: number; existing: boolean }> {
  for (let n = 1; ; n++) {
    const runId = replyRunId(eventId, n);
    const view = await engine.runs.find(runId);
    if (view?.status === 'failed' || view?.status === 'cancelled') continue;
    if (view) return { runId, n, existing: true };
    const wf = engine.runtime.registered(REPLY_WORKFLOW)!;
    // an id that exists (another process started it meanwhile) starts nothing: both follow the one run
    await engine.runtime.start(wf, input(), { id: runId });
    return { runId, n, existing: false };
  }
}

/**
 * Follows a reply's run to its end, handing `onText(at, text)` each piece of the answer as it is journaled (`at`: its
 * offset in the answer). `fromStart` false: the text journaled before this call is not handed over (a client that
 * followed an earlier delivery has it: after a crash the run goes on from there, and only what follows is new).
 */
export async function followReplyRun(
  engine: Engine,
  runId: string,
  o: { fromStart: boolean; onText: (at: number, text: string) => void; signal?: AbortSignal },
): Promise<RunView> {
  const watch = await engine.journal.watch((stream) => stream === runStream(runId));
  try {
    const tail = engine.runs.tail(runId, 0);
    let live = o.fromStart;
    for (;;) {
      const { events, end } = await tail.next();
      if (live)
        for (const e of events) {
          if (e.type !== RUN_EVENT.stepText) continue;
          const d = e.data as { name: string; at: number; text: string };
          if (d.name === 'reply') o.onText(d.at, d.text);
        }
      if (end) return await engine.runs.view(runId);
      if (events.length === 0) {
        live = true;
        o.signal?.throwIfAborted();
        // a run another process on the same SQLite file works does not wake this one: look again at the poll interval
        await watch.wakeup.wait(Math.min(FALLBACK_MS, engine.config.pollMs));
      }
    }
  } finally {
    await watch.stop();
  }
}
