import type { PollOptions, StepContext } from '../../runtime/workflow.js';
import type { HttpRequestConfig } from '../actions/http.js';
import type { LeafStep } from '../schema.js';
import { cleanup } from './cleanup.js';
import { describeCondition, holds } from './condition.js';

type PollStep = Extract<LeafStep, { type: 'poll' }>;

/** What building a poll step's cancel needs of its execution: rendering a config, and sending a status request. */
export interface CancelTools {
  /** Renders a config as it would run now (throws when a template cannot be rendered). */
  render(config: unknown): HttpRequestConfig;
  /** Sends a rendered request, its answer and errors masked. */
  send(request: HttpRequestConfig, ctx: StepContext): Promise<unknown>;
  allow: string[];
}

/**
 * A poll step's `cancel` as `ctx.poll` takes it: the cancel request alone (404, 409 and 410 count as done,
 * see cleanup.ts), or with `until` that request, then the service's status polled on `until`'s schedule
 * (each wait a durable timer) until its condition holds; past its `max_wait_seconds`, or when its
 * `fail_when` holds, the cancellation is recorded unconfirmed and the execution is cancelled all the same.
 *
 * @example
 * cancel: { method: 'POST', url: '{{steps.submit.output.body.job_url}}/cancel',
 *           until: { url: '{{steps.submit.output.body.job_url}}', until: { path: 'body.status', equals: 'cancelled' } } }
 */
export function pollCancel(
  cancel: NonNullable<PollStep['cancel']>,
  tools: CancelTools,
): PollOptions<unknown>['cancel'] {
  const { until, ...request } = cancel;
  const send = (ctx: StepContext) => cleanup(tools.render(request), ctx, tools.allow);
  if (!until) return send;
  const { method, url, headers, body, timeout_seconds } = until;
  const status = { method, url, ...(headers ? { headers } : {}), ...(body === undefined ? {} : { body }) };
  const failWhen = until.fail_when;
  return {
    send,
    until: {
      poll: (ctx) => tools.send({ ...tools.render(status), ...(timeout_seconds ? { timeout_seconds } : {}) }, ctx),
      until: (answer) => holds(until.until, answer),
      ...(failWhen
        ? {
            failWhen: (answer: unknown) =>
              holds(failWhen, answer) && `${describeCondition(failWhen, answer)} (fail_when)`,
          }
        : {}),
      initialDelay: until.initial_delay_seconds * 1000,
      interval: until.interval_seconds * 1000,
      factor: until.factor,
      maxInterval: until.max_interval_seconds * 1000,
      maxWait: until.max_wait_seconds * 1000,
    },
  };
}
