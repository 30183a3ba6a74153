import { readFileSync } from 'node:fs';

let cached: string | undefined;

/**
 * The package's version, from its package.json (beside both `src/` and `dist/`).
 *
 * @example packageVersion() // '0.1.0'
 */
export function packageVersion(): string {
  cached ??= (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
    .version;
  return cached;
}
