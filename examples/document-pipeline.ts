/**
 * Brief 004's document pipeline as TypeScript code: the same steps, states, polls, parallel
 * rendering, compensations and cancel requests as `document-pipeline.json`, on the same runtime.
 *
 *   npx tsx examples/document-pipeline.ts                          # starts the mock services itself
 *   npx runledger mock-services --speed 5 & npx tsx examples/document-pipeline.ts http://127.0.0.1:9090
 *
 * It prints each state the run enters, the current step's label and the run's end. Or serve it:
 * `runledger worker --workflows <this module compiled to JS>` runs it beside stored workflows.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startMockServices } from '../src/mock-services/index.js';
import {
  CancelledError,
  createEngine,
  partialSuccess,
  StepTimedOutError,
  TerminalError,
  workflow,
  type StepContext,
  type WorkflowContext,
} from '../src/index.js';

export interface PipelineInput {
  /** The mock services' URL (`runledger mock-services`). */
  services: string;
  content: string;
  title?: string;
  mode?: 'ai' | 'rule_only';
}

/** A JSON request with the step's idempotency key: 5xx, 429 and network errors are retried by the step's policy, other 4xx are final. */
async function call(ctx: StepContext, method: string, url: string, body?: unknown): Promise<any> {
  const response = await fetch(url, {
    method,
    signal: ctx.signal,
    headers: {
      'idempotency-key': ctx.idempotencyKey,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 500 || response.status === 429 || response.status === 408)
    throw Object.assign(new Error(`${method} ${url}: ${response.status}`), { status: response.status });
  if (response.status >= 400)
    throw Object.assign(new TerminalError(`${method} ${url}: ${response.status} ${text}`), { status: response.status });
  return text === '' ? null : JSON.parse(text);
}

/** Cleanup is idempotent: a resource already gone (404, 409, 410) counts as cleaned up. */
async function cleanup(ctx: StepContext, method: string, url: string): Promise<void> {
  try {
    await call(ctx, method, url);
  } catch (error) {
    if (![404, 409, 410].includes((error as { status?: number }).status ?? 0)) throw error;
  }
}

const retry = { maxAttempts: 4, backoff: { base: '1s', factor: 2 } };
const ended = (s: any): string | false =>
  (s.status === 'failed' || s.status === 'cancelled') && `${s.status}: ${s.error ?? ''}`;

/** Renders one format: submit, poll (cancelled when the run is), fetch the artifact. */
async function render(
  ctx: WorkflowContext,
  services: string,
  kind: 'documents' | 'presentations',
  proposalId: string,
  label: string,
) {
  const job = await ctx.step(
    'submit',
    (c) => call(c, 'POST', `${services}/v1/render/${kind}`, { proposal_id: proposalId }),
    { retry },
  );
  await ctx.setState('RENDERING_PROCESSING');
  const done = await ctx.poll('job', (c) => call(c, 'GET', `${services}/v1/render/jobs/${job.render_job_id}`), {
    label,
    retry,
    until: (j) => j.status === 'complete',
    failWhen: ended,
    initialDelay: '500ms',
    interval: '2s',
    factor: 1.5,
    maxInterval: '5s',
    maxWait: '120s',
    cancel: (c) => cleanup(c, 'POST', `${services}/v1/render/jobs/${job.render_job_id}/cancel`),
  });
  return ctx.step('artifact', (c) => call(c, 'GET', `${services}/v1/artifacts/${done.artifact_id}`), { retry });
}

export const documentPipeline = workflow('document-pipeline', async (ctx, input: PipelineInput) => {
  const api = input.services.replace(/\/+$/, '');
  let keep = false; // a layout or rendering failure keeps the session for a retry
  try {
    await ctx.setState('INITIALIZED');
    const session = await ctx.step(
      'create_session',
      (c) => call(c, 'POST', `${api}/v1/intake/sessions`, { title: input.title ?? 'Quarterly report' }),
      {
        retry,
        label: 'Creating the intake session…',
        compensate: async (s, c) =>
          keep ? undefined : cleanup(c, 'DELETE', `${api}/v1/intake/sessions/${s.session_id}`),
      },
    );
    try {
      await ctx.step(
        'submit',
        (c) => call(c, 'POST', `${api}/v1/intake/sessions/${session.session_id}/submit`, { content: input.content }),
        { retry },
      );
      await ctx.setState('SUBMITTED');
      await ctx.poll('normalize', (c) => call(c, 'GET', `${api}/v1/intake/sessions/${session.session_id}`), {
        label: 'Normalizing the content…',
        retry,
        until: (s) => s.status === 'ready',
        failWhen: ended,
        maxWait: '30s',
        cancel: (c) => cleanup(c, 'POST', `${api}/v1/intake/sessions/${session.session_id}/cancel`),
      });
    } catch (error) {
      if (!(error instanceof CancelledError)) await ctx.setState('FAILED_CONTENT_VALIDATION');
      throw error;
    }
    await ctx.setState('CONTENT_NORMALIZED');

    let proposal: { proposal_id: string };
    try {
      proposal = await ctx.step(
        'layout',
        (c) =>
          call(c, 'POST', `${api}/v1/layout/proposals`, { session_id: session.session_id, mode: input.mode ?? 'ai' }),
        { retry },
      );
      await ctx.setState('LAYOUT_QUEUED');
      await ctx.setState('LAYOUT_PROCESSING');
      await ctx.poll('layout_wait', (c) => call(c, 'GET', `${api}/v1/layout/proposals/${proposal.proposal_id}`), {
        label: 'Generating layout…',
        retry,
        until: (p) => p.status === 'complete',
        failWhen: ended,
        maxWait: '60s',
        cancel: (c) => cleanup(c, 'POST', `${api}/v1/layout/proposals/${proposal.proposal_id}/cancel`),
      });
      await ctx.step('layout_spec', (c) => call(c, 'GET', `${api}/v1/layout/proposals/${proposal.proposal_id}/spec`), {
        retry,
      });
    } catch (error) {
      // a timed-out poll is a StepTimedOutError: the layout can be retried (rule_only), so the session stays
      if (!(error instanceof CancelledError)) {
        keep = error instanceof StepTimedOutError || error instanceof TerminalError;
        await ctx.setState('FAILED_LAYOUT_GENERATION');
      }
      throw error;
    }
    await ctx.setState('LAYOUT_COMPLETE');

    await ctx.setState('RENDERING_QUEUED');
    const { word, powerpoint } = await ctx.parallel('render', {
      word: (c) => render(c, api, 'documents', proposal.proposal_id, 'Rendering Word document…'),
      powerpoint: (c) => render(c, api, 'presentations', proposal.proposal_id, 'Rendering PowerPoint…'),
    });
    for (const branch of [word, powerpoint])
      if (branch.status === 'failed' && branch.error instanceof CancelledError) throw branch.error;
    const artifacts = {
      word: word.status === 'success' ? word.output.download_url : null,
      powerpoint: powerpoint.status === 'success' ? powerpoint.output.download_url : null,
    };
    if (word.status === 'failed' && powerpoint.status === 'failed') {
      keep = true;
      await ctx.setState('FAILED_RENDERING');
      throw new TerminalError(`rendering failed: ${word.error.message}; ${powerpoint.error.message}`);
    }
    if (word.status === 'failed' || powerpoint.status === 'failed') {
      await ctx.setState('PARTIAL_COMPLETE');
      return partialSuccess({ session_id: session.session_id, ...artifacts });
    }
    await ctx.setState('RENDERING_COMPLETE');
    await ctx.setState('DELIVERED');
    return { session_id: session.session_id, ...artifacts };
  } catch (error) {
    if (error instanceof CancelledError) await ctx.setState('CANCELLED');
    throw error;
  }
});

/** Runs the pipeline once on a temp SQLite file, printing its states and labels as they change. */
async function main(services: string): Promise<void> {
  const engine = await createEngine({
    database: join(mkdtempSync(join(tmpdir(), 'pipeline-')), 'runledger.db'),
    workflows: [documentPipeline],
    pollMs: 100,
  });
  try {
    const run = await engine.start(documentPipeline, {
      services,
      content: 'Revenue grew 12 %. Costs fell.',
      mode: 'ai',
    });
    let shown = '';
    const watch = setInterval(async () => {
      const view = await engine.run(run.id);
      const line = `${view.state ?? '-'}${view.current?.label ? `  ${view.current.label}` : ''}`;
      if (line !== shown) console.log((shown = line));
    }, 100);
    try {
      console.log(JSON.stringify(await run.result(), null, 2));
    } finally {
      clearInterval(watch);
      const view = await engine.run(run.id);
      console.log(`run ${run.id} ${view.status} ${view.state ?? ''}`);
    }
  } finally {
    await engine.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  (async () => {
    // without a URL: the mock services in this process, ten times faster than life
    const mock = process.argv[2] ? null : await startMockServices({ port: 0, speed: 10 });
    try {
      await main(process.argv[2] ?? mock!.url);
    } finally {
      await mock?.close();
    }
  })().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
