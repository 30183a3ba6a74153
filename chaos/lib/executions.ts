import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Api } from './api.js';
import type { ScenarioContext } from './context.js';
import type { Echo } from './echo.js';
import { runFigures, type RunFigures } from './outcome.js';
import type { Watcher } from './watch.js';

/** The two side effects each execution makes, named by its trigger number. */
const EFFECTS = ['charge', 'notify'] as const;

/**
 * Executions of a stored workflow as load: each makes two `http_request` effects on the echo
 * server (the first with a planted secret in a header), submitted with an `Idempotency-Key` and
 * sent again after a failure until accepted. `figures` says what was lost, doubled or stuck.
 */
export class ExecutionLoad {
  /** A secret with a quote, a space and a non-ASCII letter, never to be found in plain text. */
  readonly secret = `chaos "sécret" ${randomBytes(6).toString('hex')}`;
  readonly accepted = new Map<number, string>();
  readonly refused: string[] = [];
  workflowId = '';
  private submitted = 0;

  constructor(
    private readonly ctx: ScenarioContext,
    private readonly api: Api,
    private readonly echo: Echo,
  ) {}

  async setup(): Promise<void> {
    const secret = await this.api.send('POST', '/secrets', { name: 'chaos_token', value: this.secret });
    if (secret?.status !== 201)
      throw new Error(`storing the secret: ${secret?.status} ${JSON.stringify(secret?.body)}`);
    const definition = {
      name: `chaos-effects-${this.ctx.backend}`,
      steps: [
        { id: 'prepare', type: 'transform', config: { template: 'ex-{{trigger.n}}', output_key: 'tag' } },
        {
          id: 'charge',
          type: 'http_request',
          config: {
            method: 'POST',
            url: `${this.echo.url}/effect`,
            headers: { Authorization: 'Bearer {{secrets.chaos_token}}' },
            body: { effect: '{{trigger.n}}:charge' },
          },
        },
        {
          id: 'notify',
          type: 'http_request',
          config: { method: 'POST', url: `${this.echo.url}/effect`, body: { effect: '{{trigger.n}}:notify' } },
        },
        { id: 'done', type: 'log', config: { message: 'done {{steps.prepare.output.tag}}' } },
      ],
    };
    const created = await this.api.send('POST', '/workflows', definition);
    if (created?.status !== 201)
      throw new Error(`storing the workflow: ${created?.status} ${JSON.stringify(created?.body)}`);
    this.workflowId = created.body.id;
  }

  /** Submits `count` more executions (fewer if `enough()` says so first), `concurrency` at a time, `pauseMs` apart per lane. */
  async submit(count: number, concurrency = 4, pauseMs = 0, enough: () => boolean = () => false): Promise<void> {
    const first = this.submitted;
    this.submitted += count;
    let next = first;
    const lane = async () => {
      while (next < first + count && this.ctx.msLeft() > 0 && !enough()) {
        const n = next++;
        const answer = await this.api.send(
          'POST',
          `/workflows/${this.workflowId}/execute`,
          { trigger_data: { n } },
          { 'Idempotency-Key': `chaos-${n}` },
          this.ctx.deadline,
        );
        // a retry whose first try went in (the answer lost to a kill) is 200 duplicate: the same execution, accepted
        if (answer && (answer.status === 202 || (answer.status === 200 && answer.body.duplicate === true)))
          this.accepted.set(n, answer.body.execution_id);
        else
          this.refused.push(
            `${n}: ${answer ? `${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}` : 'no answer in time'}`,
          );
        if (pauseMs > 0) await sleep(pauseMs);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
  }

  /** The accepted executions' figures (see `runFigures`); an effect sent without the secret counts as lost. */
  async figures(watcher: Watcher, deadline: number): Promise<RunFigures & { note: string }> {
    const f = await runFigures(watcher, this.echo, this.accepted, (n) => EFFECTS.map((e) => `${n}:${e}`), deadline);
    const unauthorised = this.echo.receipts.filter(
      (r) => r.effect.endsWith(':charge') && r.authorization !== `Bearer ${this.secret}`,
    ).length;
    f.lost += unauthorised;
    const note = `executions ${this.accepted.size} accepted, ${this.refused.length} refused${this.refused.length ? ` (${this.refused[0]})` : ''}; effects ${f.effects} received${unauthorised ? `, ${unauthorised} without the secret` : ''}`;
    return { ...f, note };
  }
}
