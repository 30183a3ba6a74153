// journal_growth_ratio: the product's throughput (stored executions, with trigger routing and AI
// replies running) with a long history already in the journal, divided by its throughput on an
// empty one; the goal is ≥ 0.8. Part of `npm run bench`; alone, at any size:
//   npx tsx bench/growth.ts --only sqlite --events 1000 --executions 20
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { withDatabase, type Backend } from './databases.js';
import { preloadJournal, startProduct, storedThroughput } from './product.js';

export interface GrowthSizes {
  /** Events already in the journal for the second measurement. */
  events: number;
  executions: number;
  inFlight: number;
}

export const GROWTH_SIZES: GrowthSizes = { events: 1_000_000, executions: 500, inFlight: 10 };

async function measure(
  backend: Backend,
  history: number,
  sizes: GrowthSizes,
  log: (line: string) => void,
): Promise<number> {
  return withDatabase(backend, async (database) => {
    const loading = performance.now();
    await preloadJournal(database, history);
    if (history > 0) log(`preloaded ${history} events in ${((performance.now() - loading) / 1000).toFixed(1)} s`);
    const product = await startProduct(database);
    try {
      return await storedThroughput(product, sizes.executions, sizes.inFlight);
    } finally {
      await product.close();
    }
  });
}

export async function benchGrowth(
  backend: Backend,
  sizes: GrowthSizes,
  log: (line: string) => void,
): Promise<Record<string, number>> {
  const empty = await measure(backend, 0, sizes, log);
  log(`stored executions/s on an empty journal: ${empty.toFixed(1)}`);
  const grown = await measure(backend, sizes.events, sizes, log);
  log(`stored executions/s with ${sizes.events} events in the journal: ${grown.toFixed(1)}`);
  return { journal_growth_ratio: grown / empty };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      events: { type: 'string' },
      executions: { type: 'string' },
      'in-flight': { type: 'string' },
    },
  });
  const sizes: GrowthSizes = {
    events: Number(values.events ?? GROWTH_SIZES.events),
    executions: Number(values.executions ?? GROWTH_SIZES.executions),
    inFlight: Number(values['in-flight'] ?? GROWTH_SIZES.inFlight),
  };
  const backends: Backend[] = values.only ? [values.only as Backend] : ['sqlite', 'postgres'];
  for (const backend of backends) {
    const { journal_growth_ratio } = await benchGrowth(backend, sizes, (line) => console.error(`  ${backend} ${line}`));
    console.log(`${backend} journal_growth_ratio: ${journal_growth_ratio!.toFixed(2)}`);
  }
}
