import { z } from 'zod';
import type { Engine } from '../../engine.js';
import { ConflictError, NotFoundError, ValidationError } from '../../errors.js';
import { checkName } from '../../json.js';
import { isTerminal, RUN_STATUSES } from '../../runtime/read/view.js';
import { joinedBy } from '../../runtime/start/batch.js';
import { keyStream, runIdFor } from '../../runtime/start/keyed.js';
import type { Workflow } from '../../runtime/workflow.js';
import { actorName } from '../identity.js';
import { route, type Route } from '../route.js';
import { notBeforeOf, notBeforeField, runFlowFields } from '../schemas.js';
import { checkRunFlow } from '../../workflows/flow.js';

/** Built-in workflows (`runledger.stored`, `runledger.session`) are started through their own routes. */
const BUILT_IN = /^runledger\./;

const startBody = z
  .object({
    workflow: z
      .string()
      .min(1)
      .max(200)
      .describe('the name of a code workflow registered with the server (`runledger serve --workflows <module>`)'),
    input: z.unknown().optional(),
    id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('the run id; an existing id returns that run and starts nothing'),
    ...runFlowFields,
    not_before: notBeforeField,
  })
  .strict();

const cancelBody = z
  .object({
    reason: z
      .string()
      .min(1)
      .max(2000)
      .optional()
      .describe("why: journaled with the cancel request and shown in the run's journal"),
  })
  .strict();

const signalBody = z
  .object({
    name: z.string().min(1).max(200).describe('the name a `ctx.waitForEvent(name)` waits for'),
    payload: z.unknown().optional(),
    idempotency_key: z.string().min(1).max(200).optional().describe('a repeat with the same key is ignored'),
    start: z
      .object({ workflow: startBody.shape.workflow, input: z.unknown().optional() })
      .strict()
      .optional()
      .describe('signal-with-start: the run is started (in the same transaction) when it does not exist'),
  })
  .strict();

const started = z.object({
  run_id: z.string(),
  workflow: z.string(),
  status: z.enum(RUN_STATUSES),
  duplicate: z.boolean().describe('true: the run existed; nothing was started'),
});

/**
 * Every run controllable over HTTP: start a code workflow, signal a run, cancel a run of any kind
 * (a code run, a stored workflow's execution, an agent session: each is a run, its id the run id).
 *
 * @example mount(new Hono(), controlRoutes(engine));
 */
export function controlRoutes(engine: Engine): Route[] {
  const view = async (id: string) => {
    const found = await engine.runs.find(id);
    if (!found) throw new NotFoundError(`run ${id} not found`);
    return found;
  };
  return [
    route({
      method: 'post',
      path: '/runs',
      tag: 'runs',
      summary:
        'Start a run of a registered code workflow; a repeated `id` or `Idempotency-Key` returns the first run (409 if that run is of another workflow)',
      body: startBody,
      status: 202,
      response: started,
      errors: [400, 409, 413],
      handle: async ({ body, headers }) => {
        const wf = codeWorkflow(engine, body.workflow);
        const { workflow: _w, input: _i, id: _id, not_before, ...fields } = body;
        const notBefore = notBeforeOf(not_before, Date.now());
        // each flow field given replaces the workflow's own (docs/flow-control.md)
        const flow = { ...checkRunFlow(fields), ...(notBefore === undefined ? {} : { notBefore }) };
        const key = headers.get('idempotency-key');
        const checked = body.id === undefined && key !== null ? checkName('Idempotency-Key', key, 200) : undefined;
        const id = body.id ?? (checked !== undefined ? runIdFor(`runs:${checked}`) : undefined);
        let existed = id !== undefined && (await engine.runs.find(id)) !== undefined;
        // a batched or debounced start joins its key's run, whose id is known once joined
        const joins = (flow.batch ?? wf.flow?.batch ?? flow.debounce ?? wf.flow?.debounce) !== undefined;
        const keyed = async (key: string) => {
          const started = await engine.runtime.startKeyed({
            scope: 'runs',
            key,
            name: joins
              ? async (tx) => ({
                  // a start of this key that committed first is the run: its append below finds it, nothing joins
                  runId:
                    (await joinedBy(engine.journal, tx, wf, body.input ?? null, flow, keyStream('runs', key))) ??
                    (await engine.start(wf, body.input ?? null, { tx, ...flow })).id,
                })
              : async () => ({ runId: id! }),
            begin: async (tx, runId) =>
              void (joins || (await engine.start(wf, body.input ?? null, { id: runId, tx, ...flow }))),
          });
          existed = started.duplicate;
          return engine.runtime.handle(started.runId);
        };
        const run =
          checked !== undefined
            ? await keyed(checked)
            : await engine.start(wf, body.input ?? null, { ...(id !== undefined ? { id } : {}), ...flow });
        const now = await view(run.id);
        if (now.workflow !== wf.name)
          throw new ConflictError(`run ${run.id} exists and is a run of '${now.workflow}', not '${wf.name}'`);
        return { run_id: run.id, workflow: now.workflow, status: now.status, duplicate: existed };
      },
    }),
    route({
      method: 'post',
      path: '/runs/{id}/signal',
      tag: 'runs',
      summary:
        "Send a signal to a run's `waitForEvent(name)`; 409 when the run has ended. With `start`, signal-with-start",
      body: signalBody,
      status: 202,
      response: z.object({ run_id: z.string(), name: z.string(), started: z.boolean().optional() }),
      errors: [400, 404, 409, 413],
      handle: async ({ params, body }) => {
        if (body.start) {
          const wf = codeWorkflow(engine, body.start.workflow, 'start.workflow');
          const signal = { name: body.name, payload: body.payload ?? null };
          const key = body.idempotency_key !== undefined ? { idempotencyKey: body.idempotency_key } : {};
          const sent = await engine.runtime.signalWithStart(params.id!, wf, body.start.input ?? null, {
            ...signal,
            ...key,
          });
          return { run_id: params.id!, name: body.name, started: sent.started };
        }
        const run = await view(params.id!);
        if (isTerminal(run.status))
          throw new ConflictError(`run ${run.id} has already ended (${run.status}): nothing waits for '${body.name}'`);
        await engine.signal(
          run.id,
          body.name,
          body.payload ?? null,
          body.idempotency_key !== undefined ? { idempotencyKey: body.idempotency_key } : {},
        );
        return { run_id: run.id, name: body.name };
      },
    }),
    route({
      method: 'post',
      path: '/runs/{id}/cancel',
      tag: 'runs',
      summary:
        'Cancel a run of any kind (code run, execution, session): its running step is told to stop, compensations run; 409 when it has ended',
      body: cancelBody.optional(),
      status: 202,
      response: z.object({ run_id: z.string(), status: z.literal('cancelling') }),
      errors: [400, 404, 409],
      handle: async ({ params, body, actor }) => {
        // with an API key, `run.cancel_requested` journals who asked (`actor`: the key's name)
        await engine.runtime.cancel(params.id!, body?.reason || undefined, actor ? { actor: actorName(actor) } : {});
        return { run_id: params.id!, status: 'cancelling' as const };
      },
    }),
  ];
}

/** The code workflow registered as `name`; a ValidationError says which are, or how to start a built-in one. */
function codeWorkflow(engine: Engine, name: string, path = 'workflow'): Workflow {
  const wf = BUILT_IN.test(name) ? undefined : engine.runtime.registered(name);
  if (wf) return wf;
  const known = engine.runtime.names().filter((n) => !BUILT_IN.test(n));
  const hint = BUILT_IN.test(name)
    ? 'stored workflows start with POST /workflows/{id}/execute'
    : known.length
      ? `registered: ${known.join(', ')}`
      : 'none is registered: start the server with --workflows <module>';
  throw new ValidationError(path, `no code workflow is named '${name}' (${hint})`);
}
