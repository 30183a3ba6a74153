import { defineAgent } from './agent.js';

/** The error type of a failed call to a cloud API, as the sample agent reports it. */
export class ClientError extends Error {
  override name = 'ClientError';
}

/**
 * An agent that needs no network: its background task waits 200 ms and completes, or fails with
 * `ClientError: ThrottlingException - Rate exceeded` when `input.fail` (or, for a rule's input of
 * an event, `input.detail.fail`) is true. Every session service has it, so a rule that starts
 * `{ agent: 'sample-agent' }` works out of the box.
 *
 * @example
 * const service = sessions(engine, { agents: [] });   // sample-agent is there
 * await service.start({ agent: 'sample-agent', input: { fail: false }, key: 'demo-1' });
 */
export const sampleAgent = defineAgent('sample-agent', {
  background: async (input: unknown, { signal }) => {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, 200);
      signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
    });
    const given = input as { fail?: unknown; detail?: { fail?: unknown } } | null;
    if (given?.fail === true || given?.detail?.fail === true) throw new ClientError('ThrottlingException - Rate exceeded');
    return { ok: true };
  },
  maxWait: '1m',
});
