import type { EffectOptions, Reconciled } from '../../runtime/pass/effects.js';
import type { StepContext } from '../../runtime/workflow.js';
import { httpRequest, type HttpResponseOutput } from '../actions/http.js';
import type { HttpEffect } from './http-effect-config.js';
import { act, tryRender, type StoredRun } from './run.js';

/** The step option of an `http_request` step's `effect` (see http-effect-config.ts): none when it has none. */
export function httpEffectOf(run: StoredRun, effect: HttpEffect | undefined): { effect?: EffectOptions<unknown> } {
  if (!effect) return {};
  const config = effect.reconcile;
  if (!config) return { effect: effect.at_most_once ? { atMostOnce: true } : {} };
  const happened = config.happened_when ?? [200];
  const notHappened = config.not_happened_when ?? [404];
  const { happened_when: _h, not_happened_when: _n, ...request } = config;
  return {
    effect: {
      reconcile: async (key: string, stepCtx: StepContext): Promise<Reconciled<unknown>> => {
        const { rendered, problem } = tryRender(request, run);
        let answer: HttpResponseOutput;
        try {
          answer = (await act(run, problem, () =>
            httpRequest(rendered as typeof request, { ...stepCtx, idempotencyKey: key, allow: run.options.allow }),
          )) as HttpResponseOutput;
        } catch (error) {
          const code = (error as { status?: number }).status;
          if (code !== undefined && notHappened.includes(code)) return { happened: false };
          throw error;
        }
        if (happened.includes(answer.status)) return { happened: true, output: answer };
        if (notHappened.includes(answer.status)) return { happened: false };
        throw new Error(`reconcile: GET answered ${answer.status}, in neither happened_when nor not_happened_when`);
      },
    },
  };
}
