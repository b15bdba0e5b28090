// /health answers 503 while the model loads, and the API 503 in OpenAI's
// error shape (the SDK's error class); both turn to 200 once it is loaded.
// The load is held without any hook in the server: serve logs its "listening
// on ..." line after binding and before loading, and here its stderr is a
// FIFO the test has filled, so that write, and the load after it, waits until
// the test reads the FIFO. (The loader takes regular files only, so a FIFO
// in the checkpoint itself would be refused, not waited on.)
//   QINFER=build/qinfer node --test tests/openai_client/health_loading.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import OpenAI from 'openai';
import { root, qinfer } from './serve_process.mjs';
const modelDir = path.join(root, 'tests/data/models/tiny');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The listening line is what is held, so the port is chosen here.
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Writes into the non-blocking end until the pipe takes no more.
function fill(fd) {
  for (const size of [4096, 1]) {
    const chunk = Buffer.alloc(size, '.');
    for (;;) {
      try {
        fs.writeSync(fd, chunk);
      } catch (e) {
        if (e.code === 'EAGAIN') break;
        throw e;
      }
    }
  }
}

// Everything the pipe holds now (the filler and whatever serve wrote).
function drain(fd) {
  const buf = Buffer.alloc(65536);
  let text = '';
  for (;;) {
    try {
      const n = fs.readSync(fd, buf);
      if (n === 0) return text;
      text += buf.toString('utf8', 0, n);
    } catch (e) {
      if (e.code === 'EAGAIN') return text;
      throw e;
    }
  }
}

// serve with `args`, its load held by a filled stderr FIFO; resolves once
// /health answers (503 "loading"). `ours` reads what serve logs.
async function serveHeld(args) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qinfer-loading-'));
  const fifo = path.join(dir, 'stderr.fifo');
  execFileSync('mkfifo', [fifo]);
  // Our end reads and writes without blocking; serve's end is a separate, blocking open.
  const ours = fs.openSync(fifo, fs.constants.O_RDWR | fs.constants.O_NONBLOCK);
  fill(ours);
  const theirs = fs.openSync(fifo, fs.constants.O_WRONLY);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = spawn(qinfer, ['serve', '-m', modelDir, '--port', String(port), '-t', '1', '--ctx', '256', ...args],
    { stdio: ['ignore', 'ignore', theirs] });
  fs.closeSync(theirs);
  const held = { dir, ours, url, proc, exited: null };
  proc.on('exit', (code, signal) => { held.exited = { code, signal }; });
  let health = null;
  for (let i = 0; i < 600 && !health && !held.exited; ++i) {
    health = await fetch(url + '/health').catch(() => null);
    if (!health) await sleep(50);
  }
  assert.ok(health, `serve never answered on ${url} (exited: ${JSON.stringify(held.exited)})`);
  assert.equal(health.status, 503);
  assert.deepEqual(await health.json(), { status: 'loading' });
  return held;
}

test('/health is 503 until the model is loaded, then 200; the API answers 503 meanwhile', async () => {
  const held = await serveHeld([]);
  const { dir, ours, url, proc } = held;
  let log = '', drainer = null;
  try {

    const client = new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0 });
    const messages = [{ role: 'user', content: 'Hello' }];
    await assert.rejects(client.chat.completions.create({ model: modelDir, messages, max_tokens: 2 }),
      (e) => e instanceof OpenAI.InternalServerError && e.status === 503 && /loading/.test(e.message));
    const raw = await fetch(url + '/v1/chat/completions', { method: 'POST', body: JSON.stringify({ messages }) });
    assert.equal(raw.status, 503);
    assert.ok(raw.headers.get('retry-after'), 'a 503 says when to retry');
    const { error } = await raw.json();
    assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(error.code, 503);
    assert.equal((await fetch(url + '/health')).status, 503, 'still loading while the log line is held');

    log += drain(ours).replace(/^\.+/, '');
    drainer = setInterval(() => { log += drain(ours); }, 20);  // later log lines must not block serve
    let ready = null;
    for (let i = 0; i < 600 && !held.exited; ++i) {
      ready = await fetch(url + '/health');
      if (ready.status === 200) break;
      await sleep(50);
    }
    assert.equal(ready?.status, 200, `never ready: ${log}`);
    assert.deepEqual(await ready.json(), { status: 'ok' });
    const answer = await client.chat.completions.create({ model: modelDir, messages, max_tokens: 2, temperature: 0 });
    assert.equal(answer.choices[0].message.role, 'assistant');
    assert.equal(answer.usage.completion_tokens, 2);
    assert.match(log, /listening on/);
  } finally {
    const gone = new Promise((resolve) => (held.exited ? resolve() : proc.once('exit', resolve)));
    if (!held.exited) proc.kill('SIGTERM');
    if (!drainer) drainer = setInterval(() => { log += drain(ours); }, 20);
    await gone;
    clearInterval(drainer);
    fs.closeSync(ours);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(held.exited.code, 0, log);
});

// Hunt findings: with --api-key, /metrics answered 401 while the model loaded
// (a scraper carries no key; once loaded it is open); and SIGTERM during the
// load waited for the load to end (minutes for a large model).
test('while the model loads, /metrics is 503 without a key and SIGTERM exits at once', async () => {
  const held = await serveHeld(['--api-key', 'sekrit']);
  const { dir, ours, url, proc } = held;
  let log = '';
  try {
    const metrics = await fetch(url + '/metrics');
    assert.equal(metrics.status, 503);
    assert.match((await metrics.json()).error.message, /loading/);
    assert.equal((await fetch(url + '/v1/models')).status, 401, 'the API itself still needs the key');
    const gone = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    await sleep(300);  // the signal is taken while the load is still held...
    log += drain(ours).replace(/^\.+/, '');  // ...then the pipe is read: serve's note, and the held log line
    const drainer = setInterval(() => { log += drain(ours); }, 20);
    await gone;
    clearInterval(drainer);
    log += drain(ours);
  } finally {
    if (!held.exited) proc.kill('SIGKILL');
    fs.closeSync(ours);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(held.exited.code, 0, log);
  assert.match(log, /SIGTERM while the model was loading: exiting/);
  assert.doesNotMatch(log, /ready:/);
});
