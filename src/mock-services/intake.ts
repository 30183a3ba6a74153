import type { JobFault } from './faults.js';
import { callbackUrl } from './callbacks.js';
import { created, json, objectBody, optionalString, reject, type MockRequest, type MockRoute } from './http.js';
import type { World } from './world.js';
import { now } from './world.js';

/** A session: draft → normalizing → ready | failed; cancelled before it is ready. */
export type SessionStatus = 'draft' | 'normalizing' | 'ready' | 'failed' | 'cancelled';

/** The normalized content (the brief's CIP) a ready session carries and layout proposals read. */
export interface Cip {
  cip_id: string;
  title: string;
  sections: { heading: string | null; text: string; words: number }[];
  word_count: number;
}

export interface Session {
  id: string;
  status: SessionStatus;
  title: string | null;
  intent: string | null;
  content: string | null;
  error: string | null;
  cip: Cip | null;
  callback_url: string | null;
  /** How many times the final callback is sent (a fault can make it more than 1). */
  callbackCopies: number;
  created_at: string;
  updated_at: string;
  submitted_at: string | null;
  ready_at: string | null;
}

/** Service milliseconds a normalization takes (±20 %, scaled by speed). */
export const NORMALIZE_MS = 1500;
const MAX_CONTENT = 1_000_000;

export function sessionView(session: Session) {
  return {
    session_id: session.id,
    status: session.status,
    title: session.title,
    intent: session.intent,
    content_length: session.content?.length ?? 0,
    error: session.error,
    cip: session.cip,
    created_at: session.created_at,
    updated_at: session.updated_at,
    submitted_at: session.submitted_at,
    ready_at: session.ready_at,
  };
}

/** `content`: a string (paragraphs split by blank lines, `# ` starts a heading) or a list of `{ heading?, text }`. */
function readContent(body: Record<string, unknown>): string | undefined {
  const value = body.content;
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') {
    if (value.length > MAX_CONTENT)
      throw reject(422, 'content_invalid', `content must be at most ${MAX_CONTENT} characters`, 'content');
    return value;
  }
  if (!Array.isArray(value) || value.length > 500)
    throw reject(
      422,
      'content_invalid',
      'content must be a string or a list of at most 500 { heading?, text } sections',
      'content',
    );
  return value
    .map((section, i) => {
      const s = section as { heading?: unknown; text?: unknown };
      if (
        typeof s !== 'object' ||
        s === null ||
        typeof s.text !== 'string' ||
        (s.heading !== undefined && typeof s.heading !== 'string')
      ) {
        throw reject(
          422,
          'content_invalid',
          `content[${i}] must be { heading?: string, text: string }`,
          `content[${i}]`,
        );
      }
      return s.heading ? `# ${s.heading}\n${s.text}` : s.text;
    })
    .join('\n\n');
}

function normalize(world: World, session: Session): Cip {
  const sections = (session.content ?? '')
    .split(/\n\s*\n/)
    .map((block) => block.trim())
    .filter(Boolean)
    .map((block) => {
      const [first = '', ...rest] = block.split('\n');
      const heading = first.startsWith('# ') ? first.slice(2).trim() : null;
      const text = (heading === null ? block : rest.join('\n')).trim();
      return { heading, text, words: text.split(/\s+/).filter(Boolean).length };
    });
  return {
    cip_id: world.random.fork(session.id).id('cip'),
    title: session.title ?? sections[0]?.heading ?? 'Untitled',
    sections,
    word_count: sections.reduce((n, s) => n + s.words, 0),
  };
}

function find(world: World, request: MockRequest): Session {
  const session = world.sessions.get(request.params.session_id!);
  if (!session) throw reject(404, 'session_not_found', `no session ${request.params.session_id}`);
  return session;
}

function finish(
  world: World,
  session: Session,
  status: 'ready' | 'failed' | 'cancelled',
  error: string | null = null,
): void {
  session.status = status;
  session.error = error;
  session.updated_at = now();
  if (status === 'ready') session.ready_at = session.updated_at;
  if (session.callback_url) world.callbacks.send(session.callback_url, sessionView(session), session.callbackCopies);
}

function submit(world: World, session: Session, fault: JobFault | undefined): void {
  session.status = 'normalizing';
  session.submitted_at = session.updated_at = now();
  session.callbackCopies = fault?.callbackCopies ?? 1;
  if (fault?.kind === 'hang') return;
  world.clock.after(session.id, world.random.vary(NORMALIZE_MS), () => {
    if (fault?.kind === 'fail')
      return finish(world, session, 'failed', fault.error ?? 'normalization failed (injected fault)');
    session.cip = normalize(world, session);
    finish(world, session, 'ready');
  });
}

/** Content Intake: sessions that take the user's content and normalize it. */
export function intakeRoutes(world: World): MockRoute[] {
  return [
    {
      method: 'POST',
      path: '/v1/intake/sessions',
      summary: 'create a session (draft) with optional title, intent, content, callback_url → 201',
      handle(request) {
        const body = objectBody(request);
        const at = now();
        const session: Session = {
          id: world.random.id('sess'),
          status: 'draft',
          title: optionalString(body, 'title', 500) ?? null,
          intent: optionalString(body, 'intent', 2000) ?? null,
          content: readContent(body) ?? null,
          error: null,
          cip: null,
          callback_url: callbackUrl(body),
          callbackCopies: 1,
          created_at: at,
          updated_at: at,
          submitted_at: null,
          ready_at: null,
        };
        world.sessions.set(session.id, session);
        return created(201, `/v1/intake/sessions/${session.id}`, sessionView(session));
      },
    },
    {
      method: 'POST',
      path: '/v1/intake/sessions/{session_id}/submit',
      summary:
        'submit a draft for normalization (optional content, title) → 202 normalizing; 422 without content; 409 if not a draft',
      handle(request) {
        const session = find(world, request);
        const body = objectBody(request);
        const content = readContent(body);
        const title = optionalString(body, 'title', 500);
        if (session.status !== 'draft')
          throw reject(
            409,
            'session_not_draft',
            `session ${session.id} is ${session.status}: only a draft can be submitted`,
          );
        const text = content ?? session.content;
        if (!text?.trim())
          throw reject(422, 'content_invalid', 'content is empty: give it on create or submit', 'content');
        session.content = text;
        if (title !== undefined) session.title = title;
        submit(world, session, request.jobFault);
        return created(202, `/v1/intake/sessions/${session.id}`, sessionView(session));
      },
    },
    {
      method: 'GET',
      path: '/v1/intake/sessions/{session_id}',
      summary: 'a session: status draft | normalizing | ready | failed | cancelled, and its cip once ready',
      handle: (request) => json(200, sessionView(find(world, request))),
    },
    {
      method: 'POST',
      path: '/v1/intake/sessions/{session_id}/cancel',
      summary: 'cancel a draft or normalizing session → 200; a session that has ended is left as it is (still 200)',
      handle(request) {
        const session = find(world, request);
        if (session.status === 'draft' || session.status === 'normalizing') {
          world.clock.cancel(session.id);
          finish(world, session, 'cancelled');
        }
        return json(200, sessionView(session));
      },
    },
    {
      method: 'DELETE',
      path: '/v1/intake/sessions/{session_id}',
      summary: 'delete a session (stopping its normalization) → 204; 404 if there is none',
      handle(request) {
        const session = find(world, request);
        world.clock.cancel(session.id);
        world.sessions.delete(session.id);
        return { status: 204 };
      },
    },
  ];
}
