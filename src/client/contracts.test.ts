import { describe, expectTypeOf, it } from 'vitest';
import type {
  AgentCheckpoint as RootCheckpoint,
  AgentEvent as RootEvent,
  AgentRun as RootRun,
  AgentStep as RootStep,
  AgentToolCall as RootToolCall,
} from '../index.js';
import type {
  AgentCheckpoint,
  AgentEvent,
  AgentRun,
  AgentRunDetail,
  AgentStep,
  AgentToolCall,
  Client,
} from './client.js';

type Answer<K extends keyof Client> = Client[K] extends (...args: never[]) => Promise<infer R> ? R : never;

// a type test: `tsc -p tsconfig.json --noEmit` (CI's type-check) fails when one of these does not hold;
// the client's answers are the 003 brief's contract types, and both entry points export the same ones
describe("the 003 brief's contract types", () => {
  it('are what the client answers for events, runs, steps, tool calls and checkpoints', () => {
    expectTypeOf<Answer<'agentEvent'>>().toEqualTypeOf<AgentEvent>();
    expectTypeOf<Answer<'agentEvents'>['events']>().toEqualTypeOf<AgentEvent[]>();
    expectTypeOf<Answer<'agentRuns'>['runs']>().toEqualTypeOf<AgentRun[]>();
    expectTypeOf<Answer<'agentRun'>>().toEqualTypeOf<AgentRunDetail>();
    expectTypeOf<Answer<'agentRun'>>().toExtend<AgentRun>();
    expectTypeOf<Answer<'agentRun'>['steps']>().toEqualTypeOf<AgentStep[]>();
    expectTypeOf<Answer<'agentRun'>['tool_calls']>().toEqualTypeOf<AgentToolCall[]>();
    expectTypeOf<Answer<'agentRun'>['checkpoints']>().toEqualTypeOf<AgentCheckpoint[]>();
    expectTypeOf<Answer<'approvals'>['tool_calls']>().toEqualTypeOf<AgentToolCall[]>();
  });

  it('are the same from runledger and runledger/client', () => {
    expectTypeOf<RootEvent>().toEqualTypeOf<AgentEvent>();
    expectTypeOf<RootRun>().toEqualTypeOf<AgentRun>();
    expectTypeOf<RootStep>().toEqualTypeOf<AgentStep>();
    expectTypeOf<RootToolCall>().toEqualTypeOf<AgentToolCall>();
    expectTypeOf<RootCheckpoint>().toEqualTypeOf<AgentCheckpoint>();
  });

  it('carry the fields the brief names', () => {
    expectTypeOf<AgentEvent>().toHaveProperty('conversation_id');
    expectTypeOf<AgentEvent['status']>().toEqualTypeOf<'pending' | 'processing' | 'done' | 'failed'>();
    expectTypeOf<AgentRun>().toHaveProperty('started_at').toEqualTypeOf<string | null>();
    expectTypeOf<AgentToolCall>().toHaveProperty('tool_name');
    expectTypeOf<AgentCheckpoint>().toHaveProperty('node');
  });
});
