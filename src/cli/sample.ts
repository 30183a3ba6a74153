import type { Definitions, StoredWorkflow } from '../workflows/definitions.js';

/** The workflow `runledger serve --sample` stores: no network, so it runs anywhere. */
export const SAMPLE = {
  name: 'greet-and-log',
  description: 'Greets the trigger name, builds a profile from it and logs the result.',
  steps: [
    { id: 'greet', type: 'transform', config: { template: 'Hello {{trigger.name | default("stranger") | upper}}!', output_key: 'greeting' } },
    { id: 'profile', type: 'transform', config: { mapping: { greeting: '{{steps.greet.output.greeting}}', tags: '{{trigger.tags | default("none")}}', execution: '{{execution.id}}' } } },
    { id: 'record', type: 'log', config: { message: '{{steps.greet.output.greeting}} (execution {{execution.id}})', level: 'info' } },
  ],
};

/** Stores the sample unless a workflow of its name exists; returns it. */
export async function loadSample(definitions: Definitions): Promise<StoredWorkflow> {
  for (let after: string | undefined; ; ) {
    const page = await definitions.list({ limit: 100, ...(after ? { after } : {}) });
    const found = page.find((w) => w.name === SAMPLE.name);
    if (found) return found;
    if (page.length < 100) return definitions.create(SAMPLE);
    after = page.at(-1)!.id;
  }
}
