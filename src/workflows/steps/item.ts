/**
 * `{{item}}` and `{{index}}` in the steps of a `map`: the template engine (template/) knows the roots of a whole
 * execution only, so a map's steps read its item as two step outputs no step id can name (`$item`, `$index`):
 * `{{item.name}}` is rendered as `{{steps["$item"].output.name}}`, and what a person reads says `item` again.
 */
export const ITEM_STEPS: ReadonlySet<string> = new Set(['$item', '$index']);

const ROOT = /\{\{(\s*)(item|index)(?![A-Za-z0-9_-])/g;
const BACK = /steps\["\$(item|index)"\]\.output/g;

/** `value` with every `{{item…}}` and `{{index…}}` read as the map's hidden outputs. */
export function itemTemplates<T>(value: T): T {
  if (typeof value === 'string') return value.replace(ROOT, '{{$1steps["$$$2"].output') as T;
  if (Array.isArray(value)) return value.map(itemTemplates) as T;
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, itemTemplates(item)])) as T;
  return value;
}

/** A message about a rewritten template, said as it was written (`item.name`, not the hidden output). */
export function plainItems(message: string): string {
  return message.replace(BACK, '$1');
}

/** The scope's outputs for one item: its steps see `{{item}}` and `{{index}}`. */
export function itemOutputs(item: unknown, index: number): Record<string, { output: unknown }> {
  return { $item: { output: item }, $index: { output: index } };
}
