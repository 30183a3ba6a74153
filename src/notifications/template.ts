import { ValidationError } from '../errors.js';
import { InterpolationError, parseTemplate } from '../workflows/template/parse.js';
import { render, type Scope } from '../workflows/template/render.js';

/*
 * A notification's body is JSON whose strings are `{{ }}` templates of the stored workflows, reading `{{event.*}}`
 * and `{{run.*}}`. The engine's parser knows the workflow roots only, so `event` and `run` are read as
 * `trigger.event` and `trigger.run` (a root of their own in workflows/template/parse.ts would make this a plain call).
 */

/** What a body renders with. */
export interface BodyScope {
  event: Record<string, unknown>;
  run: Record<string, unknown> | null;
}

const ROOTS = /\{\{(\s*)(event|run)(?=[\s.|}[])/g;
const MAX_BODY_BYTES = 64 * 1024;

const rewrite = (text: string) => text.replace(ROOTS, '{{$1trigger.$2');
const unwrite = (message: string) => message.replace(/trigger\.(event|run)/g, '$1');

/** A ValidationError naming the field (`body.text`) of a template that does not parse or reads another root. */
export function checkBody(body: unknown): unknown {
  if (body === undefined || body === null) return null;
  if (Buffer.byteLength(JSON.stringify(body)) > MAX_BODY_BYTES)
    throw new ValidationError('body', `must be at most ${MAX_BODY_BYTES} bytes of JSON`);
  walk(body, 'body', (text, path) => {
    let parts: ReturnType<typeof parseTemplate>;
    try {
      parts = parseTemplate(rewrite(text));
    } catch (error) {
      if (error instanceof InterpolationError) throw new ValidationError(path, unwrite(error.message));
      throw error;
    }
    for (const part of parts) {
      if (typeof part === 'string') continue;
      const [first] = part.path;
      if (part.root !== 'trigger' || (first !== 'event' && first !== 'run') || /\{\{\s*trigger\b/.test(text))
        throw new ValidationError(
          path,
          `{{${unwrite(part.source)}}}: a notification's body reads only event.* and run.*`,
        );
    }
  });
  return body;
}

/**
 * The body of one delivery: `body` rendered with `scope`, or the default payload (`{ event, run }`) without one.
 * A template reading what the event lacks (`{{run.id}}` of a dead task) renders as null there rather than failing
 * the delivery: `{{run.id | default('none')}}` names a fallback.
 *
 * @example renderBody({ text: 'Run {{run.id}} failed: {{run.error}}' }, { event, run }) // { text: 'Run run_1 failed: …' }
 */
export function renderBody(body: unknown, scope: BodyScope): unknown {
  if (body === null || body === undefined) return { ...scope.event, run: scope.run };
  const workflowScope = { trigger: { event: scope.event, run: scope.run ?? {} } } as unknown as Scope;
  return walkRender(body, workflowScope);
}

function walkRender(value: unknown, scope: Scope): unknown {
  if (typeof value === 'string') {
    try {
      return render(rewrite(value), scope);
    } catch (error) {
      if (error instanceof InterpolationError) return null;
      throw error;
    }
  }
  if (Array.isArray(value)) return value.map((item) => walkRender(item, scope));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walkRender(item, scope)]));
  return value;
}

function walk(value: unknown, path: string, visit: (text: string, path: string) => void): void {
  if (typeof value === 'string') visit(value, path);
  else if (Array.isArray(value)) for (const [i, item] of value.entries()) walk(item, `${path}[${i}]`, visit);
  else if (value !== null && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) walk(item, `${path}.${key}`, visit);
}
