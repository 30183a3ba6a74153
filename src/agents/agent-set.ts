import { ValidationError } from '../errors.js';
import type { Agent } from './agent.js';
import { sampleAgent, sampleTools } from './sample.js';
import type { Tool } from './tools.js';

/** The agents and tools one version of the session workflow runs with, by name. */
export interface AgentSet {
  agents: ReadonlyMap<string, Agent>;
  tools: ReadonlyMap<string, Tool>;
}

/**
 * The agents and tools given, checked (each made with `defineAgent` / `defineTool`, no name twice), with the sample
 * agent and its tools added unless one given has their name.
 *
 * @example const set = agentSet({ agents: [defineAgent('echo', async (input) => input)] }); set.agents.get('echo');
 */
export function agentSet(options: { agents?: Agent[]; tools?: Tool[] }): AgentSet {
  const agents = new Map<string, Agent>([[sampleAgent.name, sampleAgent]]);
  const given = new Set<string>();
  (options.agents ?? []).forEach((agent, i) => {
    if (agent?.kind !== 'code' && agent?.kind !== 'http')
      throw new ValidationError(`agents[${i}]`, 'must be made with defineAgent()');
    if (given.has(agent.name)) throw new ValidationError(`agents[${i}]`, `two agents are named '${agent.name}'`);
    given.add(agent.name);
    agents.set(agent.name, agent);
  });
  const tools = new Map<string, Tool>(sampleTools.map((t) => [t.name, t]));
  const givenTools = new Set<string>();
  (options.tools ?? []).forEach((tool, i) => {
    if (typeof tool?.run !== 'function' || typeof tool.name !== 'string')
      throw new ValidationError(`tools[${i}]`, 'must be made with defineTool()');
    if (givenTools.has(tool.name)) throw new ValidationError(`tools[${i}]`, `two tools are named '${tool.name}'`);
    givenTools.add(tool.name);
    tools.set(tool.name, tool);
  });
  return { agents, tools };
}
