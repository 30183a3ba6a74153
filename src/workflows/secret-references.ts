import type { Problem } from '../errors.js';
import { secretReferences } from './template/parse.js';

/**
 * Every `{{secrets.<name>}}` of a definition that names no stored secret, each with its path. The
 * definition may be one that failed its schema: its steps are read as far as they can be.
 *
 * @example unknownSecrets(definition, new Set(['api_key'])) // [{ path: 'steps[0].config.headers.Authorization', message: "names no stored secret 'nope' (store it first: POST /secrets)" }]
 */
export function unknownSecrets(definition: unknown, known: ReadonlySet<string>): Problem[] {
  const templated: [unknown, string][] = [];
  const add = (steps: unknown, path: string) => {
    if (!Array.isArray(steps)) return;
    steps.forEach((step: unknown, i) => {
      if (typeof step !== 'object' || step === null) return;
      const { type, config, compensate, cancel } = step as {
        type?: unknown;
        config?: unknown;
        compensate?: unknown;
        cancel?: unknown;
      };
      const at = `${path}[${i}]`;
      const branches = (config as { branches?: unknown } | undefined)?.branches;
      // a parallel step's config is its branches: their steps are read one by one
      if (type === 'parallel' && typeof branches === 'object' && branches !== null) {
        for (const [branch, inner] of Object.entries(branches)) add(inner, `${at}.config.branches.${branch}`);
      } else if (config !== undefined) templated.push([config, `${at}.config`]);
      if (compensate !== undefined) templated.push([compensate, `${at}.compensate`]);
      if (cancel !== undefined) templated.push([cancel, `${at}.cancel`]);
    });
  };
  add((definition as { steps?: unknown } | null)?.steps, 'steps');
  return templated.flatMap(([value, at]) =>
    secretReferences(value, at)
      .filter((ref) => !known.has(ref.name))
      .map((ref) => ({
        path: ref.path,
        message: `names no stored secret '${ref.name}' (store it first: POST /secrets)`,
      })),
  );
}
