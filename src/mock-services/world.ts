import { Callbacks } from './callbacks.js';
import { createClock, type Clock } from './clock.js';
import type { Session } from './intake.js';
import type { Proposal } from './layout.js';
import { createRandom, type Random } from './random.js';
import type { Artifact, RenderJob } from './render.js';

/** Everything the three services hold; `reset()` empties it and starts the seed over. */
export interface World {
  random: Random;
  readonly clock: Clock;
  readonly callbacks: Callbacks;
  sessions: Map<string, Session>;
  proposals: Map<string, Proposal>;
  jobs: Map<string, RenderJob>;
  artifacts: Map<string, Artifact>;
  /** The server's base URL (for download links), set once it listens. */
  url: string;
  reset(): void;
}

export function createWorld(seed: number, speed: number): World {
  const clock = createClock(speed);
  const world: World = {
    random: createRandom(seed),
    clock,
    callbacks: new Callbacks(clock),
    sessions: new Map(),
    proposals: new Map(),
    jobs: new Map(),
    artifacts: new Map(),
    url: '',
    reset() {
      clock.clear();
      world.callbacks.clear();
      world.random = createRandom(seed);
      world.sessions.clear();
      world.proposals.clear();
      world.jobs.clear();
      world.artifacts.clear();
    },
  };
  return world;
}

export const now = () => new Date().toISOString();
