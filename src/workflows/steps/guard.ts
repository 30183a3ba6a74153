import type { Problem } from '../../errors.js';
import type { Definition } from '../schema.js';
import { stepReferences, templateProblems, usesRoot } from '../template/parse.js';
import { render, type Scope } from '../template/render.js';

/** A compensation's optional conditions, as stored: templates over the execution's state. */
export interface Guard {
  when?: string | undefined;
  unless?: string | undefined;
}

/**
 * Whether a rendered condition holds. Falsy: undefined, null, false, 0, and a string that is blank
 * (so `"{{ … | default('') }}"` of something absent, or a concatenation of absent ids, is false).
 * Everything else, an empty array or object included, is true. Nothing is evaluated as code.
 *
 * @example truthy('') // false
 * @example truthy('art-1') // true
 */
export function truthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0) return false;
  return typeof value !== 'string' || value.trim() !== '';
}

/**
 * Why a compensation is skipped, or null when it runs: `when` must render truthy and `unless` falsy.
 * A condition that does not render (a path not there, without `default`) throws, as a config does.
 *
 * @example skipReason({ unless: "{{ steps.wait_word.output.body.artifact_id | default('') }}" }, scope) // "unless: {{ … }} is 'art-1'"
 */
export function skipReason(guard: Guard, scope: Scope, derived: Set<string>): string | null {
  if (guard.when !== undefined) {
    const value = render(guard.when, scope, derived);
    if (!truthy(value)) return `when: ${guard.when} is ${shown(value)}`;
  }
  if (guard.unless !== undefined) {
    const value = render(guard.unless, scope, derived);
    if (truthy(value)) return `unless: ${guard.unless} is ${shown(value)}`;
  }
  return null;
}

function shown(value: unknown): string {
  return value === undefined ? 'undefined' : JSON.stringify(value);
}

/**
 * What is wrong with a compensation's conditions, by JSON path (`steps[0].compensate.unless`). They may
 * read any step of the workflow, a later one too: a compensation runs after the steps that ran, and
 * one that did not run reads as not defined (hence `| default('')`).
 */
export function guardProblems(guard: Guard, path: string, definition: Definition): Problem[] {
  const ids = new Set(
    definition.steps.flatMap((s) =>
      s.type === 'parallel'
        ? [s.id, ...Object.values(s.config.branches).flatMap((list) => list.map((b) => b.id))]
        : [s.id],
    ),
  );
  const problems: Problem[] = [];
  for (const field of ['when', 'unless'] as const) {
    const value = guard[field];
    if (value === undefined) continue;
    const at = `${path}.${field}`;
    problems.push(...templateProblems(value, at));
    if (usesRoot(value, 'callback'))
      problems.push({ path: at, message: '{{callback.…}} exists only in the request of a wait_for_callback step' });
    for (const ref of stepReferences(value))
      if (!ids.has(ref)) problems.push({ path: at, message: `refers to steps.${ref}, which does not exist` });
  }
  return problems;
}
