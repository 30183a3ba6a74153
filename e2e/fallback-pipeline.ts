import { pipelineForTests } from './pipeline.js';

/** The shipped pipeline with brief 004 §6.2's fallback: a layout that failed is tried again with `rule_only`. */
export function pipelineWithFallback(
  rule: Record<string, unknown> = {},
  layoutMaxWait?: number,
): Record<string, unknown> {
  return {
    ...pipelineForTests(layoutMaxWait === undefined ? {} : { layoutMaxWait }),
    on_failure: {
      rerun_from: 'layout',
      trigger_data: { mode: 'rule_only' },
      states: ['FAILED_LAYOUT_GENERATION'],
      when: "{{ steps.layout_wait.error | default('') }}",
      ...rule,
    },
  };
}
