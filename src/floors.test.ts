import { readdirSync, readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const src = import.meta.dirname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Each floor is entered through its front door (docs: DESIGN.md, "Parts"). */
describe('doors between floors', () => {
  it('reads events through the Journal everywhere above journal/ (no Store event read outside storage/ and journal/)', () => {
    const below = [join(src, 'storage') + sep, join(src, 'journal') + sep];
    const offenders = sources(src)
      .filter((file) => !below.some((dir) => file.startsWith(dir)))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${file.slice(src.length + 1)}:${i + 1}` })),
      )
      .filter(({ line }) => /\.(eventReadStream|eventReadAll|eventReadCommitted|eventHead)\(/.test(line))
      .map(({ at }) => at);
    expect(offenders).toEqual([]);
  });

  it('derives keyed run ids in one place (runtime/start/keyed.ts)', () => {
    const offenders = sources(src)
      .filter((file) => !file.endsWith(join('runtime', 'start', 'keyed.ts')))
      .filter((file) => /`(run|ses)_\$\{createHash/.test(readFileSync(file, 'utf8')))
      .map((file) => file.slice(src.length + 1));
    expect(offenders).toEqual([]);
  });
});
