import { readFileSync } from 'node:fs';

/** The shipped example, its waits shortened for a test (the mock services run 20× faster). */
export function pipelineForTests(overrides: { layoutMaxWait?: number } = {}): any {
  const definition = JSON.parse(readFileSync(new URL('../examples/document-pipeline.json', import.meta.url), 'utf8'));
  const speedUp = (step: any) => {
    if (step.retry) step.retry.backoff_seconds = 0.05;
    if (step.type === 'poll')
      Object.assign(step.config, { initial_delay_seconds: 0.02, interval_seconds: 0.05, max_interval_seconds: 0.2 });
    if (step.cancel?.until)
      Object.assign(step.cancel.until, {
        initial_delay_seconds: 0.02,
        interval_seconds: 0.05,
        max_interval_seconds: 0.2,
      });
    if (step.id === 'layout_wait' && overrides.layoutMaxWait) step.config.max_wait_seconds = overrides.layoutMaxWait;
    if (step.type === 'parallel')
      for (const list of Object.values(step.config.branches) as any[]) list.forEach(speedUp);
  };
  definition.steps.forEach(speedUp);
  return definition;
}
