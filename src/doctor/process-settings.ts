import { LIVE_WITHIN_MS, settingDisagreements, shownSetting } from '../process-settings.js';
import type { Store } from '../storage/store.js';

type Add = (name: string, status: 'ok' | 'warn' | 'fail', detail: string) => void;

/**
 * Whether the live processes that run steps on this database run them with the same settings
 * (RUNLEDGER_HTTP_ALLOW, the public URL, the model, the secret key, the version): a warning naming
 * each setting that differs and who holds which value, since a step behaves as whichever process
 * claimed it. The same comparison each serve and worker makes at start.
 */
export async function checkProcessSettings(add: Add, store: Store): Promise<void> {
  const name = 'process settings';
  const [listed, now] = await Promise.all([store.processList(), store.now()]);
  const differing = settingDisagreements(listed, now);
  if (differing.length === 0) {
    const live = listed.filter((p) => p.settings && now - p.heartbeatAt <= LIVE_WITHIN_MS).length;
    add(
      name,
      'ok',
      live === 0
        ? 'no live process running steps has recorded its settings'
        : `the ${live} live process(es) running steps have the same settings`,
    );
    return;
  }
  const lines = differing.map(({ setting, holders }) =>
    holders
      .map(
        (h) => `${h.processes.join(', ')} ${h.processes.length > 1 ? 'have' : 'has'} ${shownSetting(setting, h.value)}`,
      )
      .join('; '),
  );
  add(name, 'warn', `${lines.join('; ')}: steps may run with either; give every process the same settings`);
}
