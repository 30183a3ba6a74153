/** One answer of the mock services: status, headers and the JSON body (undefined when empty). */
export interface MockAnswer<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/**
 * Sends one JSON request to the mock services (tests and examples use it; any HTTP client works).
 *
 * @example
 * const { status, body } = await mockRequest(mock.url, 'POST', '/v1/intake/sessions', { content: 'Hi' }, { 'idempotency-key': 'k1' });
 */
export async function mockRequest<T = any>(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<MockAnswer<T>> {
  const answer = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await answer.text();
  const type = answer.headers.get('content-type') ?? '';
  return {
    status: answer.status,
    headers: answer.headers,
    body: text && type.includes('json') ? JSON.parse(text) : text || undefined,
  };
}

/**
 * GETs `path` until its `status` field is one of `statuses` and returns that body; every status
 * seen on the way is collected in `seen` (in order, without repeats), to check a progression.
 */
export async function waitForStatus(
  url: string,
  path: string,
  statuses: string[],
  options: { timeoutMs?: number; seen?: string[] } = {},
): Promise<any> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  for (;;) {
    const { status, body } = await mockRequest(url, 'GET', path);
    if (status !== 200) throw new Error(`GET ${path} answered ${status}: ${JSON.stringify(body)}`);
    if (options.seen && options.seen.at(-1) !== body.status) options.seen.push(body.status);
    if (statuses.includes(body.status)) return body;
    if (Date.now() > deadline)
      throw new Error(
        `${path} still ${body.status} after ${options.timeoutMs ?? 15_000} ms (waiting for ${statuses.join(' | ')})`,
      );
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Drives a new session through intake and layout (brief §10.1 steps 1–5): its id and a complete proposal's id. */
export async function completeProposal(
  url: string,
  content = '# Intro\nHello\n\n# Plan\nShip it',
): Promise<{ session_id: string; proposal_id: string }> {
  const session = await mockRequest(url, 'POST', '/v1/intake/sessions', { title: 'Report', content });
  if (session.status !== 201) throw new Error(`create session answered ${session.status}`);
  const session_id: string = session.body.session_id;
  await mockRequest(url, 'POST', `/v1/intake/sessions/${session_id}/submit`);
  await waitForStatus(url, `/v1/intake/sessions/${session_id}`, ['ready']);
  const proposal = await mockRequest(url, 'POST', '/v1/layout/proposals', { session_id });
  if (proposal.status !== 202) throw new Error(`create proposal answered ${proposal.status}`);
  await waitForStatus(url, `/v1/layout/proposals/${proposal.body.proposal_id}`, ['complete']);
  return { session_id, proposal_id: proposal.body.proposal_id };
}
