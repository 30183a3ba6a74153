import { createHash } from 'node:crypto';
import { PUBLIC_URL_SETTING } from './public-url.js';
import type { ProcessInfo, ProcessSettings } from './storage/processes.js';

/** A process whose heartbeat is older than this is not compared: it is dead and not yet swept (another machine's, say). */
export const LIVE_WITHIN_MS = 10_000;

/** The names settings are recorded and shown under: the variables a user sets, where there is one. */
export const SETTING = {
  allow: 'RUNLEDGER_HTTP_ALLOW',
  publicUrl: PUBLIC_URL_SETTING,
  chat: 'chat model',
  secretKey: 'secret key',
  version: 'runledger version',
} as const;

/**
 * The settings of this process that change what a step does. The key is recorded as the start of
 * the hash of its hash: enough to tell two keys apart, nothing to find one with.
 *
 * @example processSettings({ role: 'worker', allow: ['127.0.0.1'], chatModel: 'offline', secretKey: key, version: '0.1.0' })
 */
export function processSettings(p: {
  role: string;
  allow: readonly string[];
  publicUrl?: string | undefined;
  chatModel: string;
  secretKey: Buffer;
  version: string;
}): ProcessSettings {
  const keyId = createHash('sha256')
    .update(createHash('sha256').update(p.secretKey).digest())
    .digest('hex')
    .slice(0, 12);
  return {
    role: p.role,
    values: {
      [SETTING.allow]: [...p.allow].sort().join(','),
      [SETTING.publicUrl]: p.publicUrl ?? '',
      [SETTING.chat]: p.chatModel,
      [SETTING.secretKey]: keyId,
      [SETTING.version]: p.version,
    },
  };
}

/** One setting in which another live process differs from this one. */
export interface SettingDifference {
  /** `pid@host (role)` of the other process. */
  process: string;
  setting: string;
  theirs: string;
  mine: string;
}

/**
 * The settings in which the other live processes on the database (`listed`, as `processList` shows
 * them) differ from `mine`. Processes that recorded none (they run no steps, or predate the
 * record) and those whose heartbeat is older than `LIVE_WITHIN_MS` at `now` are left out.
 */
export function settingDifferences(
  mine: { id: string; settings: ProcessSettings },
  listed: readonly ProcessInfo[],
  now: number,
): SettingDifference[] {
  const found: SettingDifference[] = [];
  for (const other of listed) {
    if (other.id === mine.id || !other.settings || now - other.heartbeatAt > LIVE_WITHIN_MS) continue;
    const names = new Set([...Object.keys(mine.settings.values), ...Object.keys(other.settings.values)]);
    for (const setting of names) {
      const theirs = other.settings.values[setting] ?? '';
      const own = mine.settings.values[setting] ?? '';
      if (theirs !== own) found.push({ process: processName(other), setting, theirs, mine: own });
    }
  }
  return found;
}

/**
 * What the live processes that recorded settings disagree on, for a process that is none of them
 * (`runledger doctor`): each setting with more than one value, and who holds which.
 */
export function settingDisagreements(
  listed: readonly ProcessInfo[],
  now: number,
): Array<{ setting: string; holders: Array<{ value: string; processes: string[] }> }> {
  const live = listed.filter((p) => p.settings && now - p.heartbeatAt <= LIVE_WITHIN_MS);
  const names = new Set(live.flatMap((p) => Object.keys(p.settings!.values)));
  const found: Array<{ setting: string; holders: Array<{ value: string; processes: string[] }> }> = [];
  for (const setting of names) {
    const byValue = new Map<string, string[]>();
    for (const p of live) {
      const value = p.settings!.values[setting] ?? '';
      byValue.set(value, [...(byValue.get(value) ?? []), processName(p)]);
    }
    if (byValue.size > 1)
      found.push({ setting, holders: [...byValue].map(([value, processes]) => ({ value, processes })) });
  }
  return found;
}

/** `RUNLEDGER_HTTP_ALLOW=127.0.0.1`, or `no RUNLEDGER_HTTP_ALLOW` for an empty value. */
export function shownSetting(setting: string, value: string): string {
  return value === '' ? `no ${setting}` : `${setting}=${value}`;
}

/** The warning a starting process prints for one difference. */
export function differenceWarning(d: SettingDifference): string {
  const mine = d.mine === '' ? 'none' : shownSetting(d.setting, d.mine);
  return `warning: process ${d.process} has ${shownSetting(d.setting, d.theirs)} and this one has ${mine}: steps may run with either; give every process the same settings`;
}

/** `4242@build-7 (serve)`: the host without the boot id it is recorded with. */
function processName(p: ProcessInfo): string {
  return `${p.pid}@${p.host.split('#')[0]} (${p.settings?.role ?? 'unknown'})`;
}
