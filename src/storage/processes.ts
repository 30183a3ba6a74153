/** The processes that hold leases (`Store.processRegister` and the rest; see `Liveness`). */
export interface ProcessInfo {
  id: string;
  /** The machine it runs on: a process on the same one can tell whether `pid` still lives. */
  host: string;
  pid: number;
  /** When the OS started `pid` (Linux: its start time in clock ticks), to tell a reused pid apart. */
  pidStart: string | null;
  startedAt: number;
  heartbeatAt: number;
}

export interface ProcessesEnded {
  processes: string[];
  /** Task leases and subscription leases ended. */
  tasks: number;
  subscriptions: number;
}

/** The prefix of the worker ids and subscription owners of a process: how its leases name it. */
export function leaseHolderPrefix(processId: string): string {
  return `${processId}:`;
}
