// Starts `qinfer serve` and waits until /health answers 200: the start-up the
// openai-client tests share (QINFER names the binary, default build/qinfer).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const qinfer = path.resolve(root, process.env.QINFER ?? 'build/qinfer');

// Resolves to { proc, url, log }: log() is the server's stderr so far.
export async function startServe(args) {
  const proc = spawn(qinfer, ['serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const log = () => stderr;
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d) => { stderr += d; });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no listening line: ' + stderr)), 30000);
    proc.stderr.on('data', () => {
      const m = stderr.match(/listening on (http:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`qinfer serve exited ${code}: ${stderr}`)); });
  });
  for (let i = 0; i < 600; ++i) {
    const r = await fetch(url + '/health').catch(() => null);
    if (r && r.status === 200) return { proc, url, log };
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill('SIGKILL');
  throw new Error('never healthy: ' + stderr);
}
