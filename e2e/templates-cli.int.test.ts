import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { cli, serve } from './child.js';

describe('runledger workflows instantiate (brief 004 §15)', () => {
  it('fills in the parameters as their declared types, and names a bad one', async () => {
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_POLL_MS: '100' });
    const run = async (...args: string[]) => {
      const c = cli([...args, '--url', server.url]);
      return { exit: (await c.exited).code, output: c.output() };
    };
    try {
      const file = join(mkdtempSync(join(tmpdir(), 'rl-template-')), 'template.json');
      const mapping = { who: '{{params.customer}}', pages: '{{params.pages}}', draft: '{{params.draft}}' };
      writeFileSync(
        file,
        JSON.stringify({
          name: 'report-template',
          parameters: {
            customer: { type: 'string' },
            pages: { type: 'integer' },
            draft: { type: 'boolean', default: false },
          },
          steps: [{ id: 'shape', type: 'transform', config: { mapping } }],
        }),
      );
      expect((await run('workflows', 'apply', file)).exit).toBe(0);
      const made = await run(
        'workflows',
        'instantiate',
        'report-template',
        '--name',
        'report-acme',
        '--param',
        'customer=Acme',
        '--param',
        'pages=3',
        '--json',
      );
      expect(made.exit, made.output).toBe(0);
      expect(JSON.parse(made.output).steps[0].config.mapping).toEqual({ who: 'Acme', pages: 3, draft: false });

      const missing = await run('workflows', 'instantiate', 'report-template', '--name', 'x', '--param', 'pages=3');
      expect(missing.exit).not.toBe(0);
      expect(missing.output).toContain('params.customer: required');
      const wrong = await run('workflows', 'instantiate', 'report-template', '--name', 'x', '--param', 'pages=many');
      expect(wrong.output).toContain("pages must be an integer (got 'many')");
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });
});
