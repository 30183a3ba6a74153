import { describe, expect, it } from 'vitest';
import { callWords } from './replay.js';

describe('callWords', () => {
  it('writes each kind of call as the code makes it', () => {
    expect([
      callWords('step', 'charge'),
      callWords('sleep', 'cool-down'),
      callWords('wait', 'paid'),
      callWords('child', 'billing'),
      callWords('poll', 'render'),
      callWords('node', 'draft'),
      callWords('state', 'SHIPPED'),
      callWords('value', 'now'),
      callWords('value', 'random'),
      callWords('value', 'usage'),
    ]).toEqual([
      "ctx.step('charge')",
      "ctx.sleep('cool-down')",
      "ctx.waitForEvent('paid')",
      'ctx.child(billing)',
      "ctx.poll('render')",
      "ctx.node('draft')",
      "ctx.setState('SHIPPED')",
      'ctx.now()',
      'ctx.random()',
      'ctx.usage(…)',
    ]);
  });
});
