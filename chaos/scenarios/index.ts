import type { Scenario } from '../lib/scenario.js';
import { killExecutions } from './kill-executions.js';

/** Every scenario, in the order `npm run chaos` runs them. */
export const scenarios: Scenario[] = [killExecutions];
