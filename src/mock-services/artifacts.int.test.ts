import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { completeProposal, mockRequest as send, startMockServices, waitForStatus, type MockServices } from './index.js';

let mock: MockServices;
beforeEach(async () => {
  mock = await startMockServices({ speed: 20, seed: 7 });
});
afterEach(() => mock.close());

describe('deleting an artifact (brief 004 §9.2–9.3)', () => {
  it('deletes a rendered artifact, its bytes with it; a second delete and one of an unknown id succeed too', async () => {
    const { proposal_id } = await completeProposal(mock.url);
    const job = await send(mock.url, 'POST', '/v1/render/documents', { proposal_id });
    const done = await waitForStatus(mock.url, `/v1/render/jobs/${job.body.render_job_id}`, ['complete']);
    const path = `/v1/artifacts/${done.artifact_id}`;
    expect((await send(mock.url, 'GET', path)).status).toBe(200);

    expect((await send(mock.url, 'DELETE', path)).status).toBe(204);
    expect((await send(mock.url, 'GET', path)).body).toMatchObject({ error: { code: 'artifact_not_found' } });
    expect((await send(mock.url, 'GET', `${path}/content`)).status).toBe(404);
    expect((await send(mock.url, 'DELETE', path)).status).toBe(204);
    expect((await send(mock.url, 'DELETE', '/v1/artifacts/art_never_made')).status).toBe(204);
    expect(mock.calls({ method: 'DELETE', path: '/v1/artifacts/{id}' })).toHaveLength(3);
  });
});
