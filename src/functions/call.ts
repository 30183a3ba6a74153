import { createHmac } from 'node:crypto';
import { toMs } from '../duration.js';
import { RetryAfterError, TerminalError } from '../errors.js';
import { httpRequest } from '../workflows/actions/http.js';
import type { FunctionRecord } from './registry.js';

/** The protocol major the engine speaks to function endpoints (docs/protocol.md, "Durable functions"). */
export const FUNCTION_PROTOCOL = 1;
const MAX_ID = 128;
const MAX_SLEEP_MS = 365 * 86_400_000;

/** A call the journal holds a result for, as the endpoint is told it: its value, or the error it failed with. */
export type Memo = { data: unknown } | { error: { name: string; message: string } };

/** What the endpoint answers: the one thing its handler does next. */
export type Command =
  | { op: 'step'; id: string; data: unknown }
  | { op: 'step'; id: string; error: { name: string; message: string }; retryable: boolean }
  | { op: 'sleep'; id: string; ms: number }
  | { op: 'wait_for_event'; id: string; timeoutMs: number | null }
  | { op: 'child'; id: string; function: string; input: unknown }
  | { op: 'finish'; data: unknown }
  | { op: 'fail'; error: { name: string; message: string } };

export interface FunctionCall {
  fn: FunctionRecord;
  /** The version the run started on, and its URL. */
  version: { version: string; url: string };
  runId: string;
  input: unknown;
  steps: Record<string, Memo>;
  /** A step the engine retries: the handler's first call not in `steps` must be it. */
  retry?: { id: string; attempt: number };
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`: what `runledger-signature` carries. */
export function sign(secret: string, body: string, seconds = Math.floor(Date.now() / 1000)): string {
  const mac = createHmac('sha256', secret).update(`${seconds}.${body}`).digest('hex');
  return `t=${seconds},v1=${mac}`;
}

/**
 * Calls the function's endpoint, signed, under the SSRF rules of `http_request` (`allow`), and reads its command.
 * A network error, a timeout, 408 or 5xx throws a plain Error, 429 a RetryAfterError (both worth another call),
 * another 4xx or an answer that is no command a TerminalError naming what is wrong.
 */
export async function callFunction(
  call: FunctionCall,
  ctx: { allow: string[]; signal: AbortSignal; idempotencyKey: string; reuse?: boolean },
): Promise<Command> {
  const { fn } = call;
  const body = JSON.stringify({
    protocol: FUNCTION_PROTOCOL,
    function: fn.name,
    version: call.version.version,
    run_id: call.runId,
    input: call.input ?? null,
    steps: call.steps,
    ...(call.retry ? { step: call.retry } : {}),
  });
  const headers = {
    'content-type': 'application/json',
    'runledger-protocol': String(FUNCTION_PROTOCOL),
    'runledger-signature': sign(fn.secret, body),
  };
  const who = `function '${fn.name}' (version '${call.version.version}')`;
  let answer: Awaited<ReturnType<typeof httpRequest>>;
  try {
    answer = await httpRequest(
      { method: 'POST', url: call.version.url, headers, body, timeout_seconds: fn.timeoutMs / 1000 },
      ctx,
    );
  } catch (error) {
    // an answer other than 2xx: `answered <status>: <status text>: <the start of its body>`
    const { status, errorClass } = error as { status?: number; errorClass?: string };
    const text = (error as Error).message;
    const message =
      status === undefined ? `${who}: ${text}` : `${who} answered ${status}: ${text.replace(/^.*? failed: \d+ /, '')}`;
    const carried = { ...(status === undefined ? {} : { status }), ...(errorClass ? { errorClass } : {}) };
    if (error instanceof RetryAfterError)
      throw Object.assign(new RetryAfterError(message, error.retryAfterMs), carried);
    if (error instanceof TerminalError) throw Object.assign(new TerminalError(message), carried);
    throw Object.assign(new Error(message, { cause: error }), carried);
  }
  if (answer.truncated) throw new TerminalError(`${who}: the answer is over 256 KiB`);
  if (answer.status !== 200) throw new TerminalError(`${who} answered ${answer.status}: a command comes with 200`);
  return readCommand(answer.body, who);
}

/** The command in `body`, or a TerminalError naming the field that is wrong. */
export function readCommand(answer: unknown, who: string): Command {
  const bad = (field: string, rule: string): never => {
    throw new TerminalError(`${who} answered a bad command: command${field ? `.${field}` : ''}: ${rule}`);
  };
  // JSON sent as text (a content-type other than application/json) is read all the same
  const body = typeof answer === 'string' ? parsed(answer) : answer;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    bad(
      '',
      `must be a JSON object (got ${typeof answer === 'string' ? `text: ${answer.slice(0, 80)}` : JSON.stringify(body)})`,
    );
  const c = body as Record<string, unknown>;
  const id = (): string => {
    if (typeof c.id !== 'string' || c.id.length < 1 || c.id.length > MAX_ID)
      bad('id', `must be 1–${MAX_ID} characters`);
    return c.id as string;
  };
  const error = (): { name: string; message: string } => {
    const e = c.error as Record<string, unknown> | null;
    if (typeof e !== 'object' || e === null || typeof e.message !== 'string')
      bad('error', 'must be { name, message } with a string message');
    return { name: typeof e!.name === 'string' && e!.name !== '' ? e!.name : 'Error', message: e!.message as string };
  };
  const duration = (field: string, value: unknown): number => {
    let ms: number;
    try {
      ms = toMs(value as number | string, `command.${field}`);
    } catch {
      return bad(field, `must be a duration: ms or a string like "10s" (got ${JSON.stringify(value)})`);
    }
    if (ms > MAX_SLEEP_MS) bad(field, `must be at most 365 days (got ${ms} ms)`);
    return ms;
  };
  switch (c.op) {
    case 'step':
      if ('error' in c && c.error !== undefined && c.error !== null)
        return { op: 'step', id: id(), error: error(), retryable: c.retryable !== false };
      if (!('data' in c)) bad('data', 'is required (or error): what the step returned');
      return { op: 'step', id: id(), data: c.data ?? null };
    case 'sleep':
      return { op: 'sleep', id: id(), ms: duration('duration', c.duration) };
    case 'wait_for_event':
      return {
        op: 'wait_for_event',
        id: id(),
        timeoutMs: c.timeout === undefined || c.timeout === null ? null : duration('timeout', c.timeout),
      };
    case 'child':
      if (typeof c.function !== 'string') bad('function', 'must be the name of a registered function');
      return { op: 'child', id: id(), function: c.function as string, input: c.input ?? null };
    case 'finish':
      return { op: 'finish', data: c.data ?? null };
    case 'fail':
      return { op: 'fail', error: error() };
    default:
      return bad('op', `must be one of step, sleep, wait_for_event, child, finish, fail (got ${JSON.stringify(c.op)})`);
  }
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
