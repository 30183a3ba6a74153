import { StepTimedOutError, TerminalError } from '../errors.js';
import { describeError } from '../errors.js';
import { checkJson } from '../json.js';

/** Thrown inside a `ctx` call that has to wait: the call's promise then never settles in this pass. */
export class Suspension {
  constructor(readonly until: number) {}
}

/** A failure as the journal records it; an HTTP `status` the error carried is kept, so replay can route on it. */
export interface FailureData {
  error: string;
  errorName: string;
  status?: number;
}

export function failureData(error: unknown): FailureData {
  const status = (error as { status?: unknown } | null)?.status;
  const data: FailureData = { error: describeError(error), errorName: error instanceof Error ? error.name : 'Error' };
  if (typeof status === 'number') data.status = status;
  return data;
}

/** The error a call failed with for good, as workflow code saw it the first time (its name, message and status). */
export function rebuild(failure: FailureData): Error {
  const message = failure.error.replace(/^[^:]*: /, '');
  const error = failure.errorName === 'TerminalError' ? new TerminalError(message) : failure.errorName === 'StepTimedOutError' ? new StepTimedOutError(message) : new Error(message);
  error.name = failure.errorName;
  if (failure.status !== undefined) Object.assign(error, { status: failure.status });
  return error;
}

/** A step's output must survive JSON and fit in an event; else the step fails for good. */
export function checkOutput(name: string, output: unknown, maxBytes: number): void {
  try {
    checkJson(`step ${name}: output`, output ?? null, maxBytes);
  } catch (error) {
    throw new TerminalError((error as Error).message);
  }
}
