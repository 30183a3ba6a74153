import { createHash } from 'node:crypto';
import { offlineModel } from '../models/offline.js';
import { defineAgent } from './agent.js';
import { defineTool, ToolBlockedError } from './tools.js';

/** The error type of a failed call to a cloud API, as the sample agent reports it. */
export class ClientError extends Error {
  override name = 'ClientError';
}

interface Order {
  order_id: string;
  status: string;
  amount: number;
}

/** A low-risk tool that needs no network: the order named in the message (its number, else A-1001). */
export const lookupOrder = defineTool('lookup_order', {
  risk: 'low',
  timeout: '5s',
  run: async (input: { order_id: string }): Promise<Order> => ({
    order_id: input.order_id,
    status: 'delivered',
    amount: 42,
  }),
});

/**
 * A high-risk tool: it waits for a person's approval, then "refunds" (the refund id is derived from the call's external
 * idempotency key, as a payment API would dedupe on it).
 */
export const issueRefund = defineTool('issue_refund', {
  risk: 'high',
  timeout: '5s',
  approvalTimeout: '1h',
  run: async (input: { order_id: string; amount: number }, { idempotencyKey }) => ({
    refund_id: `rf_${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 12)}`,
    order_id: input.order_id,
    amount: input.amount,
  }),
});

/** The sample agent's tools: every session service has them. */
export const sampleTools = [lookupOrder, issueRefund];

/** What `classify` asks the model: the customer's text, to be named `refund` or `question`. */
const CLASSIFY = 'Name the intent of the customer message: answer `refund` or `question`, one word.';

interface SampleInput {
  /** Set for a run of inbound agent events: the events it handles (several when coalesced). */
  events?: Array<{ payload?: SamplePayload }>;
  fail?: unknown;
  detail?: { fail?: unknown };
}

interface SamplePayload {
  text?: unknown;
  sleep_ms?: unknown;
  fail_times?: unknown;
}

/**
 * The agent ledger demo, which needs no network. For every run it goes through the nodes
 * `classify` → `act` → `reply`: `classify` takes 200 ms (`payload.sleep_ms` to change it) and its
 * first `payload.fail_times` attempts fail (so retries and backoff show), then asks the offline
 * model with `ctx.generate` (a durable step: its text streams on `GET /runs/{id}/stream`, its
 * tokens count against the run's budget); `act` calls the low-risk
 * tool `lookup_order` and, when the text (`payload.text`) mentions a refund, the high-risk
 * `issue_refund`, which waits for a person's approval; a rejected or expired refund is handled
 * (`reply` says so). Messages of one conversation within 2 s of each other are answered by one
 * run (its `events`), started once the conversation is quiet for 2 s (at most 10 s after the first);
 * a run past 2,000 tokens waits for approval. `input.fail` (or, for a rule's input of an event,
 * `input.detail.fail`) makes the run fail at the end with `ClientError: ThrottlingException - Rate
 * exceeded`. Every session service has it, so `POST /agent/events` and a rule that starts
 * `{ agent: 'sample-agent' }` work out of the box.
 *
 * @example
 * const service = sessions(engine, { agents: [] });   // sample-agent is there
 * await service.start({ agent: 'sample-agent', input: { fail: false }, key: 'demo-1' });
 */
export const sampleAgent = defineAgent('sample-agent', {
  ledger: { arrival: 'queue' },
  // messages of one conversation 2 s apart or less are answered by one run (at most 10 s after the first); a run
  // that has used 2,000 tokens waits for a person's approval (`runledger runs approve-budget`) before going on
  flow: { debounce: { period: '2s', maxWait: '10s' }, budget: { tokens: 2_000, onExceed: 'approve' } },
  background: async (input: unknown, ctx) => {
    const given = (typeof input === 'object' && input !== null ? input : {}) as SampleInput;
    const payloads: SamplePayload[] = (given.events ?? []).map((e) =>
      typeof e?.payload === 'object' && e.payload !== null ? e.payload : {},
    );
    const text = payloads
      .map((p) => (typeof p.text === 'string' ? p.text : ''))
      .filter(Boolean)
      .join('\n');
    const first = payloads[0] ?? {};
    const sleepMs = typeof first.sleep_ms === 'number' && first.sleep_ms >= 0 ? first.sleep_ms : 200;
    const failTimes = typeof first.fail_times === 'number' ? first.fail_times : 0;

    const classified = await ctx.node('classify', async ({ attempt }) => {
      await pause(sleepMs, ctx.signal);
      if (attempt <= failTimes)
        throw new ClientError(`ThrottlingException - classify attempt ${attempt} failed (fail_times: ${failTimes})`);
      const answer = await ctx.generate('intent', {
        model: offlineModel(),
        messages: [
          { role: 'system', content: CLASSIFY },
          { role: 'user', content: text },
        ],
        maxTokens: 400,
      });
      // the offline model quotes the message back; a real model answers the word
      return { intent: /refund/i.test(answer.text) ? 'refund' : 'question', messages: payloads.length };
    });
    const acted = await ctx.node('act', async () => {
      const order = await ctx.tool<Order>('lookup_order', { order_id: /\d+/.exec(text)?.[0] ?? 'A-1001' });
      if (classified.intent !== 'refund') return { order, refund: null };
      try {
        return { order, refund: await ctx.tool('issue_refund', { order_id: order.order_id, amount: order.amount }) };
      } catch (error) {
        if (error instanceof ToolBlockedError) return { order, refund: null, blocked: error.message };
        throw error;
      }
    });
    await ctx.node('reply', async () => {
      if (acted.refund) return { text: `Refunded ${acted.order.amount} for order ${acted.order.order_id}.` };
      if ('blocked' in acted)
        return { text: `A refund for order ${acted.order.order_id} was not approved (${acted.blocked}).` };
      return { text: `Order ${acted.order.order_id} is ${acted.order.status}.` };
    });
    if (given.fail === true || given.detail?.fail === true)
      throw new ClientError('ThrottlingException - Rate exceeded');
  },
  maxWait: '2h',
});

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}
