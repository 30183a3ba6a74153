import type { StepContext } from '../../runtime/workflow.js';
import type { StepDefinition, StepType } from '../schema.js';
import { httpRequest, type HttpRequestConfig } from './http.js';

/** A structured log line of the `log` action; the caller decides where it goes (pino in the server). */
export type LogLine = {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  execution_id: string;
  workflow_id: string;
  step_id: string;
};

export interface ActionContext extends StepContext {
  executionId: string;
  workflowId: string;
  stepId: string;
  /** Hosts and CIDRs `http_request` may reach although the SSRF guard would refuse them. */
  allow: string[];
  log(line: LogLine): void;
}

/** The step types that are one action each; `poll`, `wait_for_callback` and `parallel` are run by `steps/`. */
export type ActionType = Extract<StepType, 'http_request' | 'transform' | 'log'>;

type Config<T extends StepType> = Extract<StepDefinition, { type: T }>['config'];

/** What each step type does with its rendered config; the output is journaled as the step's. */
export const ACTIONS: { [T in ActionType]: (config: Config<T>, ctx: ActionContext) => Promise<unknown> } = {
  http_request: (config, ctx) => httpRequest(config as HttpRequestConfig, ctx),

  async transform(config) {
    if ('mapping' in config) return config.mapping;
    const text = typeof config.template === 'string' ? config.template : JSON.stringify(config.template);
    return { [config.output_key]: text };
  },

  async log(config, ctx) {
    const message = typeof config.message === 'string' ? config.message : JSON.stringify(config.message);
    ctx.log({
      level: config.level,
      message,
      execution_id: ctx.executionId,
      workflow_id: ctx.workflowId,
      step_id: ctx.stepId,
    });
    return { message, level: config.level };
  },
};
