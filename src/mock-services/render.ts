import { callbackUrl } from './callbacks.js';
import { created, json, objectBody, reject, type MockRequest, type MockRoute } from './http.js';
import { cancelJob, newJob, polled, progress, runJob, type Job } from './job.js';
import type { World } from './world.js';
import { now } from './world.js';

export type RenderFormat = 'docx' | 'pptx';

export interface RenderJob extends Job {
  format: RenderFormat;
  proposal_id: string | null;
  pages: number;
  artifact_id: string | null;
}

export interface Artifact {
  artifact_id: string;
  render_job_id: string;
  format: RenderFormat;
  filename: string;
  content_type: string;
  size_bytes: number;
  pages: number;
  created_at: string;
}

/** Service milliseconds (±20 %, scaled by speed): ~3 s as in the brief §10.1. */
export const RENDER_MS = { queuedMs: 500, docx: 2500, pptx: 3000 };

export const CONTENT_TYPES: Record<RenderFormat, string> = {
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

export function jobView(job: RenderJob) {
  return {
    render_job_id: job.id,
    status: job.status,
    format: job.format,
    proposal_id: job.proposal_id,
    progress: progress(job),
    artifact_id: job.artifact_id,
    error: job.error,
    created_at: job.created_at,
    updated_at: job.updated_at,
    started_at: job.started_at,
    finished_at: job.finished_at,
  };
}

/** The LSP to render: `lsp` itself (as GET …/spec gave it), or `proposal_id` of a complete proposal. */
function readLsp(world: World, body: Record<string, unknown>): { proposal_id: string | null; pages: number } {
  if (body.lsp !== undefined) {
    const lsp = body.lsp as { pages?: unknown; proposal_id?: unknown };
    if (typeof lsp !== 'object' || lsp === null || !Array.isArray(lsp.pages))
      throw reject(422, 'lsp_invalid', 'lsp must be a layout specification with a pages list', 'lsp.pages');
    return { proposal_id: typeof lsp.proposal_id === 'string' ? lsp.proposal_id : null, pages: lsp.pages.length };
  }
  if (typeof body.proposal_id !== 'string')
    throw reject(
      422,
      'invalid_field',
      'give lsp (the layout specification) or proposal_id (a complete proposal)',
      'proposal_id',
    );
  const proposal = world.proposals.get(body.proposal_id);
  if (!proposal) throw reject(422, 'proposal_not_found', `no proposal ${body.proposal_id}`, 'proposal_id');
  if (proposal.status !== 'complete')
    throw reject(
      409,
      'proposal_not_complete',
      `proposal ${proposal.id} is ${proposal.status}, not complete`,
      'proposal_id',
    );
  return { proposal_id: proposal.id, pages: (proposal.spec as { pages: unknown[] }).pages.length };
}

function create(world: World, request: MockRequest, format: RenderFormat) {
  const body = objectBody(request);
  const lsp = readLsp(world, body);
  const job: RenderJob = { ...newJob(world, 'job', callbackUrl(body)), format, ...lsp, artifact_id: null };
  world.jobs.set(job.id, job);
  const succeed = () => {
    const artifact: Artifact = {
      artifact_id: world.random.fork(job.id).id('art'),
      render_job_id: job.id,
      format,
      filename: `${format === 'docx' ? 'document' : 'presentation'}-${job.id}.${format}`,
      content_type: CONTENT_TYPES[format],
      size_bytes: artifactBytes(job.id, format, job.pages).length,
      pages: job.pages,
      created_at: now(),
    };
    world.artifacts.set(artifact.artifact_id, artifact);
    job.artifact_id = artifact.artifact_id;
  };
  runJob(world, job, { queuedMs: RENDER_MS.queuedMs, processingMs: RENDER_MS[format] }, request.jobFault, succeed, () =>
    jobView(job),
  );
  return created(202, `/v1/render/jobs/${job.id}`, jobView(job));
}

/** The bytes a mock artifact downloads as: a short text naming what it stands for (not a real Office file). */
export function artifactBytes(jobId: string, format: RenderFormat, pages: number): Buffer {
  return Buffer.from(`runledger mock ${format} rendered by ${jobId}: ${pages} page(s)\n`);
}

function find(world: World, request: MockRequest): RenderJob {
  const job = world.jobs.get(request.params.render_job_id!);
  if (!job) throw reject(404, 'render_job_not_found', `no render job ${request.params.render_job_id}`);
  return job;
}

/** Document Formatter: render jobs for Word documents and PowerPoint presentations. */
export function renderRoutes(world: World): MockRoute[] {
  return [
    {
      method: 'POST',
      path: '/v1/render/documents',
      summary: 'render a Word document { lsp | proposal_id, callback_url? } → 202 queued render job',
      handle: (request) => create(world, request, 'docx'),
    },
    {
      method: 'POST',
      path: '/v1/render/presentations',
      summary: 'render a PowerPoint presentation { lsp | proposal_id, callback_url? } → 202 queued render job',
      handle: (request) => create(world, request, 'pptx'),
    },
    {
      method: 'GET',
      path: '/v1/render/jobs/{render_job_id}',
      summary:
        'a render job: status queued | processing | complete | failed | cancelling | cancelled, progress, artifact_id once complete',
      handle(request) {
        const job = find(world, request);
        polled(world, job, () => jobView(job));
        return json(200, jobView(job));
      },
    },
    {
      method: 'POST',
      path: '/v1/render/jobs/{render_job_id}/cancel',
      summary:
        'cancel a queued or processing render job → 200 (202 cancelling with a cancel fault); one that has ended is left as it is (still 200)',
      handle(request) {
        const job = find(world, request);
        return json(
          cancelJob(world, job, () => jobView(job), request.cancelFault),
          jobView(job),
        );
      },
    },
  ];
}
