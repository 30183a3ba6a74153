import { callbackUrl } from './callbacks.js';
import { created, json, objectBody, optionalString, reject, type MockRequest, type MockRoute } from './http.js';
import type { Cip } from './intake.js';
import { cancelJob, newJob, polled, progress, runJob, type Job } from './job.js';
import type { World } from './world.js';

export type LayoutMode = 'ai' | 'rule_only';

export interface Proposal extends Job {
  session_id: string;
  mode: LayoutMode;
  intent: string | null;
  cip: Cip;
  spec: unknown;
}

/** Service milliseconds (±20 %, scaled by speed): ~4 s in all for `ai` as in the brief §10.1, faster for `rule_only`. */
export const LAYOUT_MS = { queuedMs: 500, ai: 3500, rule_only: 1500 };

export function proposalView(proposal: Proposal) {
  return {
    proposal_id: proposal.id,
    status: proposal.status,
    session_id: proposal.session_id,
    mode: proposal.mode,
    progress: progress(proposal),
    error: proposal.error,
    created_at: proposal.created_at,
    updated_at: proposal.updated_at,
    started_at: proposal.started_at,
    finished_at: proposal.finished_at,
  };
}

/** The layout specification (LSP): one title page, then a page per section, in a theme picked by the seed. */
function layoutSpec(world: World, proposal: Proposal) {
  const random = world.random.fork(proposal.id);
  const themes = ['clean', 'corporate', 'editorial', 'bold'];
  const layouts = ['title_and_body', 'two_column', 'image_left', 'bullets'];
  return {
    lsp_version: '1.0',
    proposal_id: proposal.id,
    session_id: proposal.session_id,
    mode: proposal.mode,
    theme: themes[Math.floor(random.next() * themes.length)],
    pages: [
      { index: 1, layout: 'title', title: proposal.cip.title },
      ...proposal.cip.sections.map((section, i) => ({
        index: i + 2,
        layout: proposal.mode === 'rule_only' ? 'title_and_body' : layouts[Math.floor(random.next() * layouts.length)],
        title: section.heading,
        body: section.text,
      })),
    ],
  };
}

function find(world: World, request: MockRequest): Proposal {
  const proposal = world.proposals.get(request.params.proposal_id!);
  if (!proposal) throw reject(404, 'proposal_not_found', `no proposal ${request.params.proposal_id}`);
  return proposal;
}

/** Gestalt Design Engine: layout proposals made from a ready session's content. */
export function layoutRoutes(world: World): MockRoute[] {
  return [
    {
      method: 'POST',
      path: '/v1/layout/proposals',
      summary:
        'propose a layout for a ready session { session_id, mode?: ai | rule_only, intent?, callback_url? } → 202 queued',
      handle(request) {
        const body = objectBody(request);
        if (typeof body.session_id !== 'string')
          throw reject(422, 'invalid_field', 'session_id is required: the id of a ready session', 'session_id');
        const mode = body.mode ?? 'ai';
        if (mode !== 'ai' && mode !== 'rule_only')
          throw reject(422, 'invalid_field', 'mode must be "ai" or "rule_only"', 'mode');
        const intent = optionalString(body, 'intent', 2000) ?? null;
        const callback = callbackUrl(body);
        const session = world.sessions.get(body.session_id);
        if (!session) throw reject(422, 'session_not_found', `no session ${body.session_id}`, 'session_id');
        if (session.status !== 'ready' || !session.cip)
          throw reject(409, 'session_not_ready', `session ${session.id} is ${session.status}, not ready`, 'session_id');
        const proposal: Proposal = {
          ...newJob(world, 'lsp', callback),
          session_id: session.id,
          mode,
          intent,
          cip: session.cip,
          spec: null,
        };
        world.proposals.set(proposal.id, proposal);
        runJob(
          world,
          proposal,
          { queuedMs: LAYOUT_MS.queuedMs, processingMs: LAYOUT_MS[mode] },
          request.jobFault,
          () => (proposal.spec = layoutSpec(world, proposal)),
          () => proposalView(proposal),
        );
        return created(202, `/v1/layout/proposals/${proposal.id}`, proposalView(proposal));
      },
    },
    {
      method: 'GET',
      path: '/v1/layout/proposals/{proposal_id}',
      summary:
        'a proposal: status queued | processing | complete | failed | cancelling | cancelled, progress 0–100, error',
      handle(request) {
        const proposal = find(world, request);
        polled(world, proposal, () => proposalView(proposal));
        return json(200, proposalView(proposal));
      },
    },
    {
      method: 'GET',
      path: '/v1/layout/proposals/{proposal_id}/spec',
      summary: "a complete proposal's layout specification (LSP JSON); 409 before it is complete",
      handle(request) {
        const proposal = find(world, request);
        if (proposal.status !== 'complete')
          throw reject(
            409,
            'proposal_not_complete',
            `proposal ${proposal.id} is ${proposal.status}: the spec exists once it is complete`,
          );
        return json(200, proposal.spec);
      },
    },
    {
      method: 'POST',
      path: '/v1/layout/proposals/{proposal_id}/cancel',
      summary:
        'cancel a queued or processing proposal → 200 (202 cancelling with a cancel fault); one that has ended is left as it is (still 200)',
      handle(request) {
        const proposal = find(world, request);
        return json(
          cancelJob(world, proposal, () => proposalView(proposal), request.cancelFault),
          proposalView(proposal),
        );
      },
    },
  ];
}
