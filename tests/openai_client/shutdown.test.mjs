// qinfer serve's shutdown as a process: SIGTERM lets every accepted request
// finish, queued ones included, through the official client; a client still
// sending its request cannot hold the exit past the bound; a second signal
// exits at once; a model that fails to load ends it with the error.
//   QINFER=build/qinfer node --test tests/openai_client/shutdown.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import OpenAI from 'openai';
import { root, qinfer, startServe } from './serve_process.mjs';

const modelDir = path.join(root, 'tests/data/models/tiny');

const exitOf = (proc) => new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));

// A connection that has sent half of its request's headers and sends no more.
function halfRequest(url) {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => {});
  socket.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n');
  // A header line a second: each read is within the server's 5 s timeout, so the request is never done.
  const trickle = setInterval(() => socket.write('X-More: yes\r\n'), 1000);
  socket.on('close', () => clearInterval(trickle));
  // Connected is not yet accepted: a signal before the accept would close the listening socket with the
  // connection still in its backlog, and nothing would hold the exit. Half a second lets serve take it.
  return new Promise((resolve) => socket.on('connect', () => setTimeout(() => resolve(socket), 500)));
}

// A hunt finding: every request not started when SIGTERM came (queued, or
// still computing its prompt) got a 200 with an empty body.
test('SIGTERM finishes the running and the queued requests, then exits 0', async () => {
  const { proc, url, log } = await startServe(['-m', modelDir, '--port', '0', '-t', '1', '--parallel', '1',
    '--ctx', '4096', '--shutdown-timeout', '60']);
  const client = new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0 });
  const exited = exitOf(proc);
  const answers = [1, 2, 3].map(() => client.completions.create({ prompt: 'hi', max_tokens: 600, temperature: 0,
    ignore_eos: true }));
  await new Promise((r) => setTimeout(r, 300));
  proc.kill('SIGTERM');
  for (const a of await Promise.all(answers)) {
    assert.equal(a.usage.completion_tokens, 600);
    assert.equal(a.choices[0].finish_reason, 'length');
  }
  assert.equal((await exited).code, 0);
  assert.match(log(), /stopped/);
});

// A hunt finding: a client sending its request slowly kept the server from
// exiting for good, and further signals were ignored.
test('a half-sent request does not hold the exit; a second signal exits at once', async () => {
  for (const twice of [false, true]) {
    const { proc, url, log } = await startServe(['-m', modelDir, '--port', '0', '-t', '1', '--shutdown-timeout', '1']);
    const socket = await halfRequest(url);
    const exited = exitOf(proc);
    const start = Date.now();
    proc.kill('SIGTERM');
    if (twice) {
      await new Promise((r) => setTimeout(r, 300));
      proc.kill('SIGTERM');
    }
    const { code } = await exited;
    const seconds = (Date.now() - start) / 1000;
    socket.destroy();
    if (twice) {
      assert.equal(code, 128 + 15);
      assert.ok(seconds < 3, `exited after ${seconds} s`);
      assert.match(log(), /SIGTERM again: exiting now/);
    } else {
      assert.equal(code, 0);
      assert.ok(seconds < 15, `exited after ${seconds} s`);
      assert.match(log(), /a connection is still open/);
    }
  }
});

// A hunt finding: a model that failed to load at once left serve hanging in
// about half the runs (stopping httplib before its accept loop began did not
// wake it), /health saying "loading" for good and SIGTERM blocked.
test('a model that fails to load ends serve with its error, every time', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qinfer-broken-'));
  for (const f of fs.readdirSync(modelDir)) fs.copyFileSync(path.join(modelDir, f), path.join(dir, f));
  fs.truncateSync(path.join(dir, 'model.safetensors'), 1000);
  for (let i = 0; i < 6; ++i) {
    const proc = spawn(qinfer, ['serve', '-m', dir, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 15000);
    const { code } = await exitOf(proc);
    clearTimeout(timer);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /truncated or not a safetensors file/);
  }
  fs.rmSync(dir, { recursive: true });
});
