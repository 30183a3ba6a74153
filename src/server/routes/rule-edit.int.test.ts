import { describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { eventually } from '../../testing/engine.js';
import { useServer } from '../test-server.js';

describe.each(backends)('PUT /rules/{id} on $name', (backend) => {
  const { call } = useServer(backend, { workers: true });

  it('replaces the pattern, which routes the next events; keeps the name and enabled; names what is wrong', async () => {
    const steps = [{ id: 'a', type: 'log', config: { message: 'x' } }];
    const wf = (await call('POST', '/workflows', { name: 'ship', steps })).body;
    const body = { name: 'orders', description: 'all', pattern: { source: ['shop'] }, target: { workflow: wf.id } };
    const rule = (await call('POST', '/rules', body)).body;
    await call('POST', `/rules/${rule.id}/disable`);
    const bigOnly = { source: ['shop'], detail: { total: [{ numeric: ['>=', 100] }] } };
    const edited = await call('PUT', `/rules/${rule.id}`, {
      name: 'orders',
      pattern: bigOnly,
      target: { workflow: wf.id },
    });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ id: rule.id, name: 'orders', pattern: bigOnly, enabled: false });
    expect(edited.body.description).toBeUndefined();
    expect((await call('GET', `/rules/${rule.id}`)).body).toEqual(edited.body);

    await call('POST', `/rules/${rule.id}/enable`);
    await call('POST', '/events', [
      { id: 'small', source: 'shop', 'detail-type': 'order', detail: { total: 5 } },
      { id: 'big', source: 'shop', 'detail-type': 'order', detail: { total: 500 } },
    ]);
    const routed = async (id: string) => (await call('GET', `/events/${id}`)).body;
    await eventually(async () => (await routed('small')).routed && (await routed('big')).routed, 20_000);
    expect((await routed('small')).matches.filter((m: { rule_id: string }) => m.rule_id === rule.id)).toEqual([]);
    expect((await routed('big')).matches.filter((m: { rule_id: string }) => m.rule_id === rule.id)).toHaveLength(1);

    const renamed = await call('PUT', `/rules/${rule.id}`, { ...body, name: 'other' });
    expect(renamed.status).toBe(400);
    expect(renamed.body.error.problems[0].path).toBe('name');
    const bad = await call('PUT', `/rules/${rule.id}`, { ...body, pattern: { source: 'shop' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems[0].path).toMatch(/^pattern/);
    expect((await call('PUT', '/rules/rule_nope', body)).status).toBe(404);
  });
});
