import type { BackendName, ScenarioContext } from './context.js';
import type { Figures } from './figures.js';

/** A chaos scenario: seeded, bounded, loopback only, against real `runledger` processes. */
export interface Scenario {
  name: string;
  backends: BackendName[];
  /** Runs the scenario and stops every process it started; the runner then checks the journal. */
  run(ctx: ScenarioContext): Promise<Figures>;
}
