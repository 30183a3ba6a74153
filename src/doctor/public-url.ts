import { resolveConfig } from '../config.js';
import { Journal } from '../journal/journal.js';
import { RUN_EVENT } from '../runtime/events.js';
import { REPORT_SIGNAL } from '../agents/session.js';
import { checkPublicUrl, PUBLIC_URL_SETTING } from '../public-url.js';
import type { Store } from '../storage/store.js';
import { Definitions } from '../workflows/definitions.js';
import type { StepDefinition } from '../workflows/schema.js';

type Add = (name: string, status: 'ok' | 'warn' | 'fail', detail: string) => void;

/** Waits scanned for an HTTP agent's report before the check says it found none. */
const MAX_WAITS = 20_000;

/**
 * RUNLEDGER_PUBLIC_URL: its value when set (a fail when it is not a usable URL); unset, a warning
 * when something stored hands URLs out — a stored workflow with a `wait_for_callback` step, or a
 * session of an HTTP agent (its run waited for a report) — since a worker, or `serve` on a
 * wildcard address, then fails those steps. Only `serve` on a loopback or specific host has a URL
 * of its own, and this process cannot see how the servers were started.
 */
export async function checkPublicUrlSetting(add: Add, store: Store, publicUrl: string | undefined): Promise<void> {
  const name = 'public url';
  if (publicUrl !== undefined) {
    try {
      add(name, 'ok', `${PUBLIC_URL_SETTING}=${checkPublicUrl(publicUrl)}: callback URLs and report_url start with it`);
    } catch (error) {
      add(
        name,
        'fail',
        `${error instanceof Error ? error.message : String(error)}: wait_for_callback steps and HTTP agents fail until it is fixed`,
      );
    }
    return;
  }
  const journal = new Journal(store, resolveConfig());
  const waiting = await callbackWorkflows(store, journal);
  const agents = await reportWaits(journal);
  const users = [
    ...(waiting.length > 0
      ? [
          `${waiting.length} stored workflow(s) with a wait_for_callback step (${waiting.slice(0, 3).join(', ')}${waiting.length > 3 ? ', …' : ''})`,
        ]
      : []),
    ...(agents ? ['sessions of HTTP agents'] : []),
  ];
  if (users.length === 0) {
    add(
      name,
      'ok',
      `${PUBLIC_URL_SETTING} unset; nothing stored hands out a URL (no wait_for_callback step, no HTTP agent session)`,
    );
    return;
  }
  add(
    name,
    'warn',
    `${PUBLIC_URL_SETTING} unset, and the database holds ${users.join(' and ')}: a worker, or serve on a wildcard address (0.0.0.0), has no URL to hand out and fails those steps. Set ${PUBLIC_URL_SETTING} to the address services reach the API at (the load balancer's)`,
  );
}

async function callbackWorkflows(store: Store, journal: Journal): Promise<string[]> {
  const definitions = new Definitions(store, journal);
  const found: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = await definitions.list({ limit: 500, ...(after ? { after } : {}) });
    for (const wf of page) if (wf.steps.some(waitsForCallback)) found.push(`${wf.id} '${wf.name}'`);
    if (page.length < 500) return found;
    after = page.at(-1)!.id;
  }
}

function waitsForCallback(step: StepDefinition): boolean {
  if (step.type === 'wait_for_callback') return true;
  if (step.type !== 'parallel') return false;
  return Object.values(step.config.branches).some((steps) => steps.some(waitsForCallback));
}

/** Whether a run waited for an HTTP agent's report: only HTTP agents' sessions wait for one. */
async function reportWaits(journal: Journal): Promise<boolean> {
  for (let from = 0, seen = 0; seen < MAX_WAITS; ) {
    const page = await journal.readAll({
      fromPosition: from,
      limit: 1000,
      streamPrefix: 'run:',
      types: [RUN_EVENT.waitStarted],
    });
    if (page.some((e) => (e.data as { name?: string }).name === REPORT_SIGNAL)) return true;
    if (page.length < 1000) return false;
    seen += page.length;
    from = page.at(-1)!.position + 1;
  }
  return false;
}
