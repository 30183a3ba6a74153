import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Past this many lines a source file is asking to be split (STYLE.md, "Small files, one responsibility each"). */
const MAX_LINES = 400;

const root = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

function lineCount(path: string): number {
  const text = readFileSync(path, 'utf8');
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

describe('file sizes', () => {
  // Biome formats the tree at 120 columns and CI checks the format, so a file cannot hide its size in long lines.
  it(`keeps every source file of src/ and ui/src at most ${MAX_LINES} lines`, () => {
    const tooLong = [join(root, 'src'), join(root, 'ui', 'src')]
      .flatMap(sources)
      .map((path) => ({ path, lines: lineCount(path) }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ path, lines }) => `${relative(root, path)}: ${lines} lines`);
    expect(tooLong).toEqual([]);
  });
});
