// Admission under a full queue, with serve's default --http-threads: every
// request the engine holds (--parallel running + --max-queue waiting) keeps
// its connection's thread, so the next request gets 503 + Retry-After and
// /health and /metrics still answer at once. (A hunt finding: with a fixed
// 64 threads the requests beyond them queued unseen inside the HTTP library,
// no 503 was ever sent, and /health waited behind them.)
//   QINFER=build/qinfer node --test tests/openai_client/admission.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { root, startServe } from './serve_process.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const kQueue = 70;  // more than the 64 threads the server used to have

test('a full queue answers 503 and /health stays up', async () => {
  const { proc, url } = await startServe(['-m', path.join(root, 'tests/data/models/tiny'), '--port', '0', '-t', '2',
    '--ctx', '16384', '--parallel', '1', '--max-queue', String(kQueue)]);
  const controllers = [];
  try {
    const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 16000, ignore_eos: true, stream: true });
    for (let i = 0; i < 1 + kQueue; ++i) {
      const c = new AbortController();
      controllers.push(c);
      fetch(url + '/v1/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body,
        signal: c.signal }).then(async (r) => { for await (const _ of r.body); }).catch(() => {});
    }
    const gauge = (text, name) => Number(text.match(new RegExp(name + '\\{[^}]*\\} (\\S+)'))[1]);
    let metrics = '';
    for (let i = 0; i < 400; ++i) {
      metrics = await (await fetch(url + '/metrics', { signal: AbortSignal.timeout(5000) })).text();
      if (gauge(metrics, 'qinfer:num_requests_waiting') === kQueue) break;
      await sleep(50);
    }
    assert.equal(gauge(metrics, 'qinfer:num_requests_running'), 1);
    assert.equal(gauge(metrics, 'qinfer:num_requests_waiting'), kQueue);

    const health = await fetch(url + '/health', { signal: AbortSignal.timeout(5000) });
    assert.equal(health.status, 200);
    const refused = await fetch(url + '/v1/completions', { method: 'POST', signal: AbortSignal.timeout(5000),
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: 'b', max_tokens: 2 }) });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.match((await refused.json()).error.message, /too many requests are waiting/);
  } finally {
    for (const c of controllers) c.abort();
    proc.kill('SIGTERM');
  }
});
