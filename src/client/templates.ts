import type { StoredWorkflow } from '../workflows/definitions.js';
import { Client } from './client.js';

/**
 * The template route (brief 004 §15) on a running server, beside everything `Client` reaches.
 *
 * @example
 * await new TemplateClient({ url }).instantiate('report-template', { name: 'report-acme', params: { customer: 'Acme' } });
 */
export class TemplateClient extends Client {
  instantiate = (template: string, body: { name: string; params?: Record<string, unknown> }) =>
    this.call<StoredWorkflow>('POST', `/workflows/${encodeURIComponent(template)}/instantiate`, body);
}
