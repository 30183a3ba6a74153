import { describe, expect, it } from 'vitest';
import { sseReader } from './sse-read.js';

describe('sseReader', () => {
  it('answers the messages a chunk completes, keeping a message cut between chunks until its end', () => {
    const read = sseReader();
    expect(read('id: 1\nevent: run.started\ndata: {"a":1}\n\nid: 2\nevent: step.')).toEqual([
      { id: '1', event: 'run.started', data: '{"a":1}' },
    ]);
    expect(read('completed\ndata: {"b":2}\n\n')).toEqual([{ id: '2', event: 'step.completed', data: '{"b":2}' }]);
  });

  it('skips comments and frames without data, joins data lines, and names an unnamed event message', () => {
    const read = sseReader();
    expect(read(': keep-alive\n\nid: 3\n\ndata: one\ndata: two\n\n')).toEqual([
      { id: '', event: 'message', data: 'one\ntwo' },
    ]);
  });
});
