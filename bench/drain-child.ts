// A worker process of the drain benchmark: `node --import tsx bench/drain-child.ts <database> <queue> [concurrency]`.
// It opens its engine and says "ready"; on "start" it works the queue (concurrency 10 unless given) and reports
// its count of completed tasks after each flush; on "stop" it closes and exits. The parent, which
// sums the counts of all children, decides when the queue is drained.
import { createEngine, engineStore } from '../dist/engine.js';

const [database, queue, concurrency] = process.argv.slice(2);
if (!database || !queue || !process.send)
  throw new Error('usage: node --import tsx bench/drain-child.ts <database> <queue> (with an IPC channel)');
const send = process.send.bind(process);

const engine = await createEngine({ database });
// Open the pool and the LISTEN connection now, so "start" measures work, not connecting.
await engineStore(engine).now();
await (await engineStore(engine).listen('tasks', () => {}))();

let completed = 0;
let reporting = false;
function report(): void {
  if (reporting) return;
  reporting = true;
  setImmediate(() => {
    reporting = false;
    send({ completed });
  });
}

process.on('message', async (message) => {
  if (message === 'start') {
    engine.work(queue, async () => null, {
      concurrency: Number(concurrency ?? 10),
      onError: (error) => console.error('drain-child:', error),
      onSettled: (_task, outcome) => {
        if (outcome === 'completed') completed += 1;
        report();
      },
    });
  } else if (message === 'stop') {
    await engine.close();
    process.exit(0);
  }
});
send('ready');
