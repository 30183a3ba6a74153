import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * A module of code workflows for `runledger serve --workflows` in the dashboard's tests, written
 * as plain JavaScript against the built package (the server runs from dist/, without tsx):
 * `nap` sleeps for an hour after one step, `broken` fails its step for good, `book` fails after a
 * step whose compensation then runs, `tell` streams a model's answer in several batches. (The run with a retry, a sleep, a wait and a child run is the
 * sample `serve --sample` starts: src/cli/sample.ts.)
 */
export function uiWorkflowsModule(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'rl-ui-wf-')), 'workflows.mjs');
  writeFileSync(
    file,
    `import { workflow, TerminalError } from '${resolve('dist/index.js')}';
export const nap = workflow('nap', async (ctx) => {
  await ctx.step('prepare', async () => ({ ready: true }));
  await ctx.sleep('nap', '1h');
  return 'rested';
});
export const broken = workflow('broken', async (ctx) => {
  await ctx.step('charge', async () => { throw new TerminalError('card declined: insufficient funds'); });
});
// a model of the test's own that streams ten words 60 ms apart: more than one 50 ms batch of text
const slowModel = {
  id: 'ui-slow',
  continuation: 'restart',
  async *stream() {
    for (let i = 1; i <= 10; i++) {
      await new Promise((r) => setTimeout(r, 60));
      yield { type: 'text', text: 'w' + i + ' ' };
    }
    yield { type: 'finish', finishReason: 'stop', inputTokens: 3, outputTokens: 10 };
  },
};
export const tell = workflow('tell', async (ctx) => {
  const { text } = await ctx.generate('answer', { model: slowModel, messages: [{ role: 'user', content: 'tell' }] });
  return text;
});
export const book = workflow('book', async (ctx) => {
  await ctx.step('hold-seat', async () => { await new Promise((r) => setTimeout(r, 150)); return { seat: '12A' }; }, { compensate: async () => { await new Promise((r) => setTimeout(r, 300)); } });
  await ctx.step('charge', async () => { throw new TerminalError('card declined: insufficient funds'); });
});
`,
  );
  return file;
}
