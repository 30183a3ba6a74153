import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliProgram } from './cli/main.js';
import { documentedVariables, envValue } from './settings.js';
import { configurationMarkdown } from './settings-docs.js';

const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.ts$/.test(name) && !/\.test\.ts$/.test(name) ? [path] : [];
  });

describe('configuration', () => {
  it('docs/configuration.md is the generated one (run npm run docs:config after changing a setting or flag)', () => {
    const committed = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    expect(committed).toBe(configurationMarkdown(cliProgram()));
  });

  it('documents every environment variable the code reads', () => {
    const documented = documentedVariables();
    const read = new Set<string>();
    for (const file of sources(new URL('.', import.meta.url).pathname)) {
      for (const match of readFileSync(file, 'utf8').matchAll(/\benv(?:\.|\[['"])([A-Z][A-Z0-9_]+)/g))
        read.add(match[1]!);
    }
    expect(read.size).toBeGreaterThan(10);
    expect([...read].filter((name) => !documented.has(name))).toEqual([]);
  });

  it('reads a setting, then its aliases in order, and treats empty as unset', () => {
    expect(envValue({ DATABASE_URL: 'postgres://a', RUNLEDGER_DB: 'b.db' }, 'RUNLEDGER_DATABASE')).toBe('b.db');
    expect(envValue({ RUNLEDGER_DATABASE: '', DATABASE_URL: 'postgres://a' }, 'RUNLEDGER_DATABASE')).toBe(
      'postgres://a',
    );
    expect(envValue({}, 'PORT')).toBeUndefined();
    expect(() => envValue({}, 'NOPE')).toThrow(/not a declared setting/);
  });
});
