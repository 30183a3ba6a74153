import type { Scenario } from '../lib/scenario.js';
import { clockSkew } from './clock-skew.js';
import { diskFull } from './disk-full.js';
import { fuzzServer } from './fuzz.js';
import { killChat } from './kill-chat.js';
import { killCodeRuns } from './kill-code-runs.js';
import { killExecutions } from './kill-executions.js';
import { killLimits } from './kill-limits.js';
import { killSessions } from './kill-sessions.js';
import { pgProxy } from './pg-proxy.js';
import { sigstopWorker } from './sigstop-worker.js';
import { pgRestartFast, pgStopImmediate } from './pg-restart.js';

/** Every scenario, in the order `npm run chaos` runs them. */
export const scenarios: Scenario[] = [
  killExecutions,
  killCodeRuns,
  killLimits,
  killChat,
  killSessions,
  pgRestartFast,
  pgStopImmediate,
  pgProxy,
  sigstopWorker,
  diskFull,
  clockSkew,
  fuzzServer,
];
