import { readFileSync } from 'node:fs';

/**
 * Reads V8 heap snapshots (`v8.writeHeapSnapshot`) and prints what holds the heap: the objects that
 * retain the most (retained size from the dominator tree, as DevTools computes it) with the chain of
 * dominators above each, and the constructors whose instances' count and self size grew between two
 * snapshots (a per-execution leak shows as a count growing with the executions). Not run by CI.
 *
 * node --import tsx scripts/heap-top.ts after-5000.heapsnapshot [after-10000.heapsnapshot] [top=25]
 */
interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Heap {
  count: number;
  name(node: number): string;
  type(node: number): string;
  self: Float64Array;
  retained: Float64Array;
  idom: Int32Array;
  /** The node before it on a shortest path from the root, and that edge's name: how the program reaches it. */
  parent: Int32Array;
  edgeName: string[];
}

function load(path: string): Heap {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const { meta } = raw.snapshot;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const [nType, nName, nSelf, nEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) =>
    meta.node_fields.indexOf(f),
  ) as [number, number, number, number];
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f)) as [
    number,
    number,
    number,
  ];
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const weak = edgeTypes.indexOf('weak');
  const count = raw.nodes.length / nf;
  const first = new Int32Array(count + 1);
  for (let n = 0, e = 0; n < count; n++) {
    first[n] = e;
    e += raw.nodes[n * nf + nEdges]! * ef;
  }
  first[count] = raw.edges.length;
  const self = new Float64Array(count);
  for (let n = 0; n < count; n++) self[n] = raw.nodes[n * nf + nSelf]!;
  const targets = (n: number, visit: (to: number, edge: number) => void) => {
    for (let e = first[n]!; e < first[n + 1]!; e += ef)
      if (raw.edges[e + eType] !== weak) visit(raw.edges[e + eTo]! / nf, e);
  };
  // postorder from the root (node 0), iteratively
  const order = new Int32Array(count).fill(-1);
  const post: number[] = [];
  const stack: [number, number][] = [[0, first[0]!]];
  order[0] = -2;
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const [n, e] = top;
    if (e >= first[n + 1]!) {
      order[n] = post.length;
      post.push(n);
      stack.pop();
      continue;
    }
    top[1] = e + ef;
    if (raw.edges[e + eType] === weak) continue;
    const to = raw.edges[e + eTo]! / nf;
    if (order[to] === -1) {
      order[to] = -2;
      stack.push([to, first[to]!]);
    }
  }
  const preds: number[][] = Array.from({ length: count }, () => []);
  for (const n of post) targets(n, (to) => preds[to]!.push(n));
  // Cooper, Harvey and Kennedy: iterate idoms in reverse postorder until they settle
  const idom = new Int32Array(count).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a]! < order[b]!) a = idom[a]!;
      while (order[b]! < order[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let i = post.length - 2; i >= 0; i--) {
      const n = post[i]!;
      let best = -1;
      for (const p of preds[n]!) if (idom[p] !== -1) best = best === -1 ? p : intersect(p, best);
      if (best !== -1 && idom[n] !== best) {
        idom[n] = best;
        changed = true;
      }
    }
  }
  const retained = Float64Array.from(self);
  for (const n of post) {
    const dominator = idom[n]!;
    if (n !== 0 && dominator >= 0) retained[dominator] = retained[dominator]! + retained[n]!;
  }
  const parent = new Int32Array(count).fill(-1);
  const edgeName: string[] = new Array(count).fill('');
  parent[0] = 0;
  for (let queue = [0], i = 0; i < queue.length; i++) {
    const n = queue[i]!;
    targets(n, (to, e) => {
      if (parent[to] !== -1) return;
      parent[to] = n;
      const name = raw.edges[e + eName]!;
      const type = edgeTypes[raw.edges[e + eType]!];
      edgeName[to] = type === 'element' || type === 'hidden' ? `[${name}]` : String(raw.strings[name]);
      queue.push(to);
    });
  }
  return {
    count,
    name: (n) => raw.strings[raw.nodes[n * nf + nName]!]!,
    type: (n) => nodeTypes[raw.nodes[n * nf + nType]!]!,
    self,
    retained,
    idom,
    parent,
    edgeName,
  };
}

const kb = (bytes: number) => `${Math.round(bytes / 1024).toLocaleString('en')} KB`;
const label = (heap: Heap, n: number) => `${heap.type(n)} ${heap.name(n).slice(0, 60).replace(/\s+/g, ' ')}`;

/** How the program reaches `n`: the shortest path from the root, nearest holder first (system and synthetic hops left out). */
function chain(heap: Heap, n: number): string {
  const out: string[] = [];
  for (let at = n; at !== 0 && heap.parent[at]! >= 0 && out.length < 10; at = heap.parent[at]!) {
    const holder = heap.parent[at]!;
    if (heap.type(holder) === 'synthetic' || heap.type(holder) === 'hidden') continue;
    out.push(`.${heap.edgeName[at]} of ${label(heap, holder)}`);
  }
  return out.join('  ');
}

function top(heap: Heap, limit: number): void {
  // the biggest dominators that are not synthetic roots, skipping those inside one already listed
  // the program's own objects: code, contexts and strings are the runtime's, listed by byConstructor
  const candidates = [...Array(heap.count).keys()]
    .filter((n) => heap.type(n) === 'object' && !heap.name(n).startsWith('system /'))
    .sort((a, b) => heap.retained[b]! - heap.retained[a]!);
  const listed = new Set<number>();
  for (const n of candidates) {
    let inside = false;
    for (let at = heap.idom[n]!; at !== 0; at = heap.idom[at]!) if (listed.has(at)) inside = true;
    if (inside && listed.size > 0) continue;
    listed.add(n);
    console.log(`${kb(heap.retained[n]!).padStart(10)}  ${label(heap, n)}\n            ${chain(heap, n)}`);
    if (listed.size >= limit) break;
  }
}

function byConstructor(heap: Heap): Map<string, { count: number; self: number }> {
  const out = new Map<string, { count: number; self: number }>();
  for (let n = 0; n < heap.count; n++) {
    const key = `${heap.type(n)} ${heap.type(n) === 'string' || heap.type(n) === 'concatenated string' || heap.type(n) === 'sliced string' ? '' : heap.name(n).slice(0, 60)}`;
    const entry = out.get(key) ?? { count: 0, self: 0 };
    entry.count += 1;
    entry.self += heap.self[n]!;
    out.set(key, entry);
  }
  return out;
}

const [firstPath, secondPath, limitText] = process.argv.slice(2);
if (!firstPath) throw new Error('usage: heap-top.ts <a.heapsnapshot> [b.heapsnapshot] [top=25]');
const limit = Number(limitText ?? 25);
const a = load(firstPath);
const total = a.self.reduce((sum, size) => sum + size, 0);
console.log(`${firstPath}: ${a.count.toLocaleString('en')} nodes, ${kb(total)}\n\nTop retainers:`);
top(a, limit);
if (secondPath) {
  const b = load(secondPath);
  console.log(
    `\n${secondPath}: ${b.count.toLocaleString('en')} nodes, ${kb(b.self.reduce((sum, size) => sum + size, 0))}\n\nTop retainers:`,
  );
  top(b, limit);
  const before = byConstructor(a);
  const after = byConstructor(b);
  const grown = [...after]
    .map(([key, { count, self }]) => ({
      key,
      count: count - (before.get(key)?.count ?? 0),
      self: self - (before.get(key)?.self ?? 0),
    }))
    .sort((x, y) => y.self - x.self);
  console.log('\nGrowth by constructor (count, self size), first to second:');
  for (const g of grown.slice(0, limit))
    console.log(`${kb(g.self).padStart(10)}  ${String(g.count).padStart(8)}  ${g.key}`);
}
