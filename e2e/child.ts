import { spawn } from 'node:child_process';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs `node --import tsx <script> …args` to its end (or its kill); resolves with how it ended. */
export function runScript(script: string, ...args: string[]): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (chunk) => (stderr += chunk));
    proc.on('error', reject);
    proc.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
}
