import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const src = import.meta.dirname;
const ui = join(src, '..', 'ui', 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [path] : [];
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

/**
 * The floors of DESIGN.md "Parts", lowest first: a file may import its own floor, any floor below it,
 * and the kernel. A floor is named by its folders under src/ (`ui` is ui/src) and its top-level files.
 */
const FLOORS: string[][] = [
  ['storage'],
  // a process's row and the leases it holds (liveness.ts), the settings it records there (process-settings.ts)
  ['journal', 'liveness.ts', 'process-settings.ts'],
  ['queue'],
  ['runtime'],
  // deletes finished records by a policy: the engine owns one, features register their kinds with it
  ['retention'],
  // the engine: the journal, queue, runtime and retention put together; features take it
  ['engine.ts'],
  // functions: remote code a stored workflow's `function` step calls, and the executor its runs run on
  ['workflows', 'functions'],
  // models: the providers ctx.generate calls (the AI SDK, the chat's offline model)
  ['triggers', 'chat', 'agents', 'notifications', 'models'],
  // the product assembled, and the doctor, which checks what the assembled product needs (agents' report URL …)
  ['app', 'doctor'],
  // the faces, and the test helpers (`runledger/testing`), which assemble engines as app/ does
  ['server', 'cli', 'client', 'ui', 'testing', 'mock-services'],
  // the public API
  ['index.ts'],
];

/** Importable from every floor, importing nothing but itself: observe/ and every top-level file no floor names. */
const KERNEL = 'kernel';

/** The part a file belongs to: its folder under src/, `ui`, or its own name when it sits at the top of src/. */
function part(file: string): string {
  return file.startsWith(ui + sep) ? 'ui' : relative(src, file).split(sep)[0]!;
}

function floorOf(file: string): number | typeof KERNEL {
  const name = part(file);
  if (name === 'observe') return KERNEL;
  const floor = FLOORS.findIndex((names) => names.includes(name));
  if (floor !== -1) return floor;
  if (relative(src, file).includes(sep))
    throw new Error(`${relative(src, file)}: its folder is on no floor (add it to FLOORS)`);
  return KERNEL;
}

/** The source files a file imports (relative specifiers, `import type` and `export … from` too), resolved to paths. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*)'(\.{1,2}\/[^']+)'/g)].map((m) => {
    const path = resolve(dirname(file), m[1]!);
    const stem = path.replace(/\.js$/, '');
    // './x.js' is x.ts in the tree; the dashboard writes './x' for x.ts or x.tsx
    return [`${stem}.ts`, `${stem}.tsx`, join(stem, 'index.ts')].find((candidate) => existsSync(candidate)) ?? path;
  });
}

const name = (file: string) => relative(join(src, '..'), file);

describe('floors (DESIGN.md, "Parts")', () => {
  const files = [...sources(src), ...sources(ui)];

  it('imports nothing from a floor above its own; the kernel imports only the kernel', () => {
    const offenders = files.flatMap((file) => {
      const from = floorOf(file);
      return imports(file)
        .filter((target) => target.startsWith(src + sep) || target.startsWith(ui + sep))
        .filter((target) => {
          const to = floorOf(target);
          if (to === KERNEL) return false;
          return from === KERNEL || to > from;
        })
        .map((target) => `${name(file)} → ${name(target)}`);
    });
    expect(offenders).toEqual([]);
  });

  it('keeps storage/ out of the faces: nothing in server/, cli/, client/ or ui/src imports it, types included', () => {
    const faces = ['server', 'cli', 'client', 'ui'];
    const offenders = files
      .filter((file) => faces.includes(part(file)))
      .flatMap((file) =>
        imports(file)
          .filter((target) => target.startsWith(join(src, 'storage') + sep))
          .map((target) => `${name(file)} → ${name(target)}`),
      );
    expect(offenders).toEqual([]);
  });

  it("reads engine.store only in app/ and testing/ (the rest go through the engine's doors)", () => {
    const offenders = files
      .filter((file) => !['app', 'testing', 'engine.ts'].includes(part(file)))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${name(file)}:${i + 1}` })),
      )
      .filter(({ line }) => /\bengine\.store\b|\bengineStore\(/.test(line))
      .map(({ at }) => at);
    expect(offenders).toEqual([]);
  });
});
