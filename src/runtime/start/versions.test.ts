import { describe, expect, it } from 'vitest';
import { missingVersion, sourceTokens, sourceVersion, versionTag } from './versions.js';

describe('sourceVersion', () => {
  it('is the same for one function as tsc and esbuild print it, and differs when the code does', () => {
    const tsc = `async (ctx, input) => {
        // charge first
        const charged = await ctx.step('charge', async () => input.n * 60_000);
        await ctx.sleep('settle', '1500ms'); /* then ship */
        return ctx.step('ship', async () => ({ shipped: \`v1:\${charged}\`, url: 'http://x/y' }));
    }`;
    const esbuild =
      'async(ctx,input)=>{const charged=await ctx.step("charge",async()=>input.n*6e4);await ctx.sleep("settle","1500ms");return ctx.step("ship",async()=>({shipped:`v1:${charged}`,url:"http://x/y"}))}';
    expect(sourceTokens(tsc)).toBe(sourceTokens(esbuild));
    expect(sourceTokens(esbuild.replace('6e4', '6e3'))).not.toBe(sourceTokens(esbuild));
    expect(sourceTokens(esbuild.replace('*', '+'))).not.toBe(sourceTokens(esbuild));
    expect(sourceTokens(esbuild.replace('"ship"', '"send"'))).not.toBe(sourceTokens(esbuild));
    // imported names as vitest, an esbuild bundle and tsc's CommonJS output call them
    const plain = 'async(ctx)=>{appendFileSync(log,`${ctx.runId}`);return readFile(p)}';
    expect(
      sourceTokens(
        'async (ctx) => {\n\t(0,__vite_ssr_import_0__.appendFileSync)(log, `${ctx.runId}`);\n\treturn (0,__vite_ssr_import_1__.readFile)(p);\n}',
      ),
    ).toBe(sourceTokens(plain));
    expect(
      sourceTokens(
        'async (ctx) => { (0, import_node_fs.appendFileSync)(log, `${ctx.runId}`); return (0, import_promises.readFile)(p); }',
      ),
    ).toBe(sourceTokens(plain));
    expect(
      sourceTokens(
        'async (ctx) => { (0, fs_1.appendFileSync)(log, `${ctx.runId}`); return (0, promises_1.readFile)(p); }',
      ),
    ).toBe(sourceTokens(plain));
    expect(sourceTokens(plain.replace('readFile', 'writeFile'))).not.toBe(sourceTokens(plain));
    // esbuild's keepNames wrapper
    expect(sourceTokens('ctx.step("a", f, { compensate: __name(async () => record(`x(${y})`), "compensate") })')).toBe(
      sourceTokens('ctx.step("a", f, { compensate: async () => record(`x(${y})`) })'),
    );
    // a string's escapes as one tool writes them and its characters as another does
    expect(sourceTokens('log(`done\\n`, "caf\\u00e9")')).toBe(sourceTokens('log(`done\n`, "café")'));
    const f = async (x: number) => x + 1;
    const g = async (x: number) => x - 1;
    expect(sourceVersion(f)).toMatch(/^[0-9a-f]{12}$/);
    expect(sourceVersion(f)).not.toBe(sourceVersion(g));
  });

  it('says a run waits for its version only while it has not ended and no live worker has it', () => {
    const live = new Set([versionTag('order', 'b')]);
    expect(missingVersion({ workflow: 'order', version: 'a', status: 'sleeping' }, live)).toBe('a');
    expect(missingVersion({ workflow: 'order', version: 'b', status: 'sleeping' }, live)).toBeNull();
    expect(missingVersion({ workflow: 'order', version: 'a', status: 'failed' }, live)).toBeNull();
    expect(missingVersion({ workflow: 'order', version: null, status: 'running' }, live)).toBeNull();
  });
});
