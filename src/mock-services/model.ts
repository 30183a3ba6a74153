import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, json, reject, type MockRoute } from './http.js';

/** How the model answers: `words` numbered words after a head naming the question, one chunk each, `delay_ms` apart. */
export interface ModelSettings {
  words: number;
  delay_ms: number;
}

/**
 * A fault of the next `times` streamed answers (default 1, or `"always"`): after `after` chunks (default 3), a chunk
 * that is not JSON then the end (`malformed`), the end without a finish reason or `[DONE]` (`no_finish`), or, before
 * anything, an HTTP `status` (with `retry_after` seconds).
 */
export interface ModelFault {
  kind: 'malformed' | 'no_finish' | 'status';
  after?: number;
  status?: number;
  retry_after?: number;
  times?: number | 'always';
}

/** One request the model received. */
export interface ModelRequestLog {
  seq: number;
  at: string;
  model: string;
  messages: Array<{ role: string; content: string }>;
  max_tokens: number | null;
  /** The length of the assistant message the request ended with (the text to continue), 0 when none. */
  prefix: number;
  /** True when the answer was continued after that prefix (it was the answer's start). */
  continued: boolean;
  /** Chunks of text sent. */
  chunks: number;
  /** `streaming`, then `done`, `length` (cut at max_tokens), `fault` or `gone` (the client left). */
  outcome: 'streaming' | 'done' | 'length' | 'fault' | 'gone';
}

const DEFAULTS: ModelSettings = { words: 40, delay_ms: 40 };
const MAX_BODY = 2_000_000;

/**
 * A loopback OpenAI-compatible model (`POST /v1/chat/completions`) for ctx.generate's tests and demos: it streams a
 * deterministic answer slowly — `Answer to "<last user message>":` then ` w1 w2 … wN.`, every word unique, so a
 * repeated or missing piece shows — and continues a trailing assistant message that is the answer's start (as vLLM
 * and llama.cpp do), streaming only what follows. It logs each request's messages and has fault knobs.
 */
export class MockModel {
  private settings: ModelSettings = { ...DEFAULTS };
  private faultList: Array<ModelFault & { left: number }> = [];
  private log: ModelRequestLog[] = [];
  private readonly open = new Set<ServerResponse>();

  /** The answer to `messages`, whole. */
  answer(messages: Array<{ role: string; content: string }>): string {
    const question = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const words = Array.from({ length: this.settings.words }, (_, i) => ` w${i + 1}`).join('');
    return `Answer to "${question.slice(0, 80)}":${words}.`;
  }

  configure(settings: Partial<ModelSettings>): ModelSettings {
    const next = { ...this.settings, ...settings };
    if (!(Number.isInteger(next.words) && next.words >= 1 && next.words <= 10_000))
      throw reject(422, 'invalid_field', 'words must be a whole number from 1 to 10000', 'words');
    if (!(Number.isFinite(next.delay_ms) && next.delay_ms >= 0 && next.delay_ms <= 60_000))
      throw reject(422, 'invalid_field', 'delay_ms must be from 0 to 60000', 'delay_ms');
    this.settings = next;
    return { ...next };
  }

  setFaults(faults: ModelFault[]): void {
    faults.forEach((f, i) => {
      if (!['malformed', 'no_finish', 'status'].includes(f?.kind))
        throw reject(422, 'invalid_field', 'kind must be malformed, no_finish or status', `faults[${i}].kind`);
      if (f.kind === 'status' && !(Number.isInteger(f.status) && f.status! >= 400 && f.status! <= 599))
        throw reject(422, 'invalid_field', 'status must be 400–599', `faults[${i}].status`);
    });
    this.faultList = faults.map((f) => ({ ...f, left: f.times === 'always' ? Infinity : (f.times ?? 1) }));
  }

  requests(): ModelRequestLog[] {
    return this.log.map((r) => ({ ...r, messages: r.messages.map((m) => ({ ...m })) }));
  }

  reset(): void {
    this.settings = { ...DEFAULTS };
    this.faultList = [];
    this.log = [];
  }

  /** Ends the streams under way (the server is closing). */
  close(): void {
    for (const res of this.open) res.destroy();
    this.open.clear();
  }

  async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    if (!body || !Array.isArray(body.messages))
      return void res
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify(fail(400, 'invalid_body', 'messages must be a list').body));
    const messages = (body.messages as Array<{ role: string; content: unknown }>).map((m) => ({
      role: String(m.role),
      content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
    }));
    const last = messages.at(-1);
    const prefix = last?.role === 'assistant' ? last.content : '';
    const answer = this.answer(messages);
    const continued = prefix !== '' && answer.startsWith(prefix);
    const entry: ModelRequestLog = {
      seq: this.log.length + 1,
      at: new Date().toISOString(),
      model: String(body.model ?? ''),
      messages,
      max_tokens: typeof body.max_tokens === 'number' ? body.max_tokens : null,
      prefix: prefix.length,
      continued,
      chunks: 0,
      outcome: 'streaming',
    };
    this.log.push(entry);
    const fault = this.faultList.find((f) => f.left > 0);
    if (fault) fault.left -= 1;
    if (fault?.kind === 'status') {
      entry.outcome = 'fault';
      const headers = { 'content-type': 'application/json', ...retryAfter(fault) };
      return void res.writeHead(fault.status!, headers).end(JSON.stringify({ error: { message: 'injected fault' } }));
    }
    const rest = continued ? answer.slice(prefix.length) : answer;
    const pieces = rest.match(/\s*\S+/g) ?? [];
    const limit = entry.max_tokens ?? Infinity;
    const sent = pieces.slice(0, limit);
    const promptTokens = messages.reduce((n, m) => n + (m.content.match(/\S+/g)?.length ?? 0), 0);
    const chunk = (choice: object, extra: object = {}) =>
      `data: ${JSON.stringify({ id: `chatcmpl-${entry.seq}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: entry.model, choices: [{ index: 0, ...choice }], ...extra })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    this.open.add(res);
    res.on('close', () => {
      this.open.delete(res);
      if (entry.outcome === 'streaming') entry.outcome = 'gone';
    });
    for (const [i, piece] of sent.entries()) {
      if (fault && i === (fault.after ?? 3)) {
        entry.outcome = 'fault';
        if (fault.kind === 'malformed') res.write('data: {"choices": [{"delta": {"content": "w\n\n');
        return void res.end();
      }
      await new Promise((resolve) => setTimeout(resolve, this.settings.delay_ms));
      if (res.destroyed) return;
      res.write(chunk({ delta: { role: 'assistant', content: piece }, finish_reason: null }));
      entry.chunks += 1;
    }
    const cut = sent.length < pieces.length;
    res.write(chunk({ delta: {}, finish_reason: cut ? 'length' : 'stop' }));
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: sent.length,
      total_tokens: promptTokens + sent.length,
    };
    res.write(
      `data: ${JSON.stringify({ id: `chatcmpl-${entry.seq}`, object: 'chat.completion.chunk', choices: [], usage })}\n\n`,
    );
    res.end('data: [DONE]\n\n');
    entry.outcome = cut ? 'length' : 'done';
  }
}

/** `GET /_model` (settings, faults, requests), `PUT /_model` ({ words?, delay_ms?, faults? }), `DELETE /_model`. */
export function modelControlRoutes(model: MockModel): MockRoute[] {
  return [
    {
      method: 'GET',
      path: '/_model',
      summary: "the model's settings and the requests it received (their messages)",
      handle: () => json(200, { requests: model.requests() }),
    },
    {
      method: 'PUT',
      path: '/_model',
      summary: 'set the model: { words?, delay_ms?, faults?: [{ kind: malformed|no_finish|status, after?, times? }] }',
      handle(request) {
        const body = (request.body ?? {}) as Partial<ModelSettings> & { faults?: ModelFault[] };
        const { faults, ...settings } = body;
        const now = model.configure(settings);
        if (faults !== undefined) model.setFaults(Array.isArray(faults) ? faults : [faults]);
        return json(200, now);
      },
    },
    {
      method: 'DELETE',
      path: '/_model',
      summary: "forget the model's requests, settings and faults",
      handle() {
        model.reset();
        return { status: 204 };
      },
    },
  ];
}

function retryAfter(fault: ModelFault): Record<string, string> {
  return fault.retry_after === undefined ? {} : { 'retry-after': String(fault.retry_after) };
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => {
      try {
        const value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve(typeof value === 'object' && value !== null ? value : undefined);
      } catch {
        resolve(undefined);
      }
    });
    req.on('error', () => resolve(undefined));
  });
}
