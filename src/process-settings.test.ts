import { describe, expect, it } from 'vitest';
import {
  differenceWarning,
  LIVE_WITHIN_MS,
  processSettings,
  settingDifferences,
  settingDisagreements,
} from './process-settings.js';
import type { ProcessInfo, ProcessSettings } from './storage/processes.js';

const key = Buffer.alloc(32, 7);
const settings = (over: Partial<Parameters<typeof processSettings>[0]> = {}) =>
  processSettings({ role: 'serve', allow: [], chatModel: 'offline', secretKey: key, version: '0.1.0', ...over });
const row = (id: string, pid: number, s: ProcessSettings | null, heartbeatAt = 1_000_000): ProcessInfo => ({
  id,
  host: 'box#boot-1',
  pid,
  pidStart: null,
  startedAt: 0,
  heartbeatAt,
  settings: s,
});

describe('process settings', () => {
  it('records the key only as a short hash of its hash', () => {
    const s = settings();
    expect(s.values['secret key']).toMatch(/^[0-9a-f]{12}$/);
    expect(JSON.stringify(s)).not.toContain(key.toString('hex').slice(0, 12));
    expect(settings({ secretKey: Buffer.alloc(32, 8) }).values['secret key']).not.toBe(s.values['secret key']);
  });

  it('names the other process and the setting when an allowlist differs', () => {
    const mine = { id: 'proc_b', settings: settings({ role: 'worker' }) };
    const [d, ...rest] = settingDifferences(
      mine,
      [row('proc_a', 4242, settings({ allow: ['127.0.0.1'] })), row('proc_b', 4243, mine.settings)],
      1_000_500,
    );
    expect(rest).toEqual([]);
    expect(differenceWarning(d!)).toBe(
      'warning: process 4242@box (serve) has RUNLEDGER_HTTP_ALLOW=127.0.0.1 and this one has none: steps may run with either; give every process the same settings',
    );
  });

  it('finds nothing when the settings are the same, the allowlist in another order', () => {
    const mine = { id: 'proc_b', settings: settings({ allow: ['10.0.0.0/8', '127.0.0.1'] }) };
    expect(
      settingDifferences(mine, [row('proc_a', 1, settings({ allow: ['127.0.0.1', '10.0.0.0/8'] }))], 1_000_000),
    ).toEqual([]);
  });

  it('leaves out processes that run no steps and those whose heartbeat stopped', () => {
    const mine = { id: 'proc_b', settings: settings() };
    const other = settings({ publicUrl: 'https://x.example' });
    expect(
      settingDifferences(
        mine,
        [row('proc_a', 1, null), row('proc_c', 2, other, 1_000_000 - LIVE_WITHIN_MS - 1)],
        1_000_000,
      ),
    ).toEqual([]);
    expect(
      settingDifferences(mine, [row('proc_c', 2, other, 1_000_000 - LIVE_WITHIN_MS)], 1_000_000).map((d) => d.setting),
    ).toEqual(['RUNLEDGER_PUBLIC_URL']);
  });

  it('tells an outsider (doctor) who holds which value', () => {
    const listed = [
      row('a', 1, settings({ allow: ['127.0.0.1'] })),
      row('b', 2, settings({ role: 'worker' })),
      row('c', 3, settings()),
    ];
    expect(settingDisagreements(listed, 1_000_000)).toEqual([
      {
        setting: 'RUNLEDGER_HTTP_ALLOW',
        holders: [
          { value: '127.0.0.1', processes: ['1@box (serve)'] },
          { value: '', processes: ['2@box (worker)', '3@box (serve)'] },
        ],
      },
    ]);
    expect(settingDisagreements(listed.slice(1), 1_000_000)).toEqual([]);
  });
});
