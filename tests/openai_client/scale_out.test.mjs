// Three qinfer serve replicas behind Debian's nginx with deploy/nginx-qinfer.conf
// (ports rewritten): a session (X-Session-Id) keeps hitting the replica whose
// prefix cache holds its conversation, and when replicas are killed —
// between requests and mid-stream — requests fail over and nothing hangs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { root, startServe } from './serve_process.mjs';
const modelDir = path.join(root, 'tests/data/models/tiny');
const nginxBin = ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find((p) => fs.existsSync(p));

const replicas = [];
let nginx, nginxDir, client, proxyUrl;

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function startReplica() {
  const { proc, url } = await startServe(['-m', modelDir, '--served-model-name', 'tiny', '--port', '0', '-t', '1',
    '--ctx', '512', '--block-size', '4', '--parallel', '4', '--max-queue', '4']);
  return { proc, port: Number(new URL(url).port) };
}

const skip = nginxBin ? false : 'nginx is not installed (scripts/test_openai_client.sh installs it)';

before(async () => {
  if (skip) return;
  for (let i = 0; i < 3; ++i) replicas.push(await startReplica());
  nginxDir = fs.mkdtempSync(path.join(os.tmpdir(), 'qinfer-nginx-'));
  const dir = nginxDir;
  fs.chmodSync(dir, 0o777);  // nginx workers run as nobody when started by root
  const port = await freePort();
  let conf = fs.readFileSync(path.join(root, 'deploy/nginx-qinfer.conf'), 'utf8');
  conf = conf.replaceAll('/tmp/qinfer-nginx', path.join(dir, 'nginx'))
    .replace('listen 127.0.0.1:8080', `listen 127.0.0.1:${port}`);
  replicas.forEach((r, i) => { conf = conf.replace(`127.0.0.1:${8081 + i}`, `127.0.0.1:${r.port}`); });
  const confPath = path.join(dir, 'nginx.conf');
  fs.writeFileSync(confPath, conf);
  nginx = spawn(nginxBin, ['-c', confPath, '-p', dir, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'ignore'] });
  for (let i = 0; i < 100; ++i) {
    const r = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
    if (r && r.status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  proxyUrl = `http://127.0.0.1:${port}`;
  client = new OpenAI({ baseURL: `${proxyUrl}/v1`, apiKey: 'none', maxRetries: 0, timeout: 30000 });
});

after(async () => {
  if (nginx && nginx.exitCode === null) {  // SIGTERM: the master stops its workers too (SIGKILL would orphan them)
    const exited = new Promise((r) => nginx.once('exit', r));
    nginx.kill('SIGTERM');
    await exited;
  }
  for (const r of replicas) if (r.proc.exitCode === null) r.proc.kill('SIGKILL');
  if (nginxDir) fs.rmSync(nginxDir, { recursive: true, force: true });
});

// The live replica with the largest value of a metric (to kill the one that matters).
async function busiest(metric) {
  let best = null, bestValue = -1;
  for (const r of replicas) {
    if (r.proc.exitCode !== null || r.proc.signalCode !== null) continue;
    const text = await (await fetch(`http://127.0.0.1:${r.port}/metrics`)).text();
    const m = text.match(new RegExp(metric.replace(':', '\\:') + '\\{[^}]*\\} ([0-9.e+]+)'));
    const v = m ? Number(m[1]) : 0;
    if (v > bestValue) { best = r; bestValue = v; }
  }
  return { replica: best, value: bestValue };
}

async function kill(replica) {
  replica.proc.kill('SIGKILL');
  await new Promise((r) => replica.proc.once('exit', r));
}

const sessions = Array.from({ length: 8 }, (_, i) => `session-${i}`);
const conversation = (s) => [{ role: 'system', content: `You are assistant number ${s}, and you answer briefly.` },
  { role: 'user', content: `Tell me about ${s}.` }];

function chat(s, extra = {}) {
  return client.chat.completions.create(
    { model: 'tiny', messages: conversation(s), max_tokens: 8, temperature: 0, ignore_eos: true, ...extra },
    { headers: { 'X-Session-Id': s } });
}

test('a session keeps its replica: its repeated prompt comes from the prefix cache', { skip }, async () => {
  for (const s of sessions) {
    const first = await chat(s);
    const again = await chat(s);
    assert.equal(again.choices[0].message.content, first.choices[0].message.content);
    assert.ok(again.usage.prompt_tokens_details.cached_tokens > 0, `${s}: cache hit on its replica`);
  }
});

// Clients that stream their request body (Spring's RestClient, Node's http
// without a length) send it chunked: read within --max-body by a replica,
// passed on by nginx.
test('a chunked request body is served, through nginx and by a replica', { skip }, async () => {
  const body = new TextEncoder().encode(JSON.stringify({ model: 'tiny', prompt: 'Hi', max_tokens: 1 }));
  const chunked = new ReadableStream({ start(c) { c.enqueue(body); c.close(); } });
  const res = await fetch(`${proxyUrl}/v1/completions`,
    { method: 'POST', body: chunked, duplex: 'half', headers: { 'Content-Type': 'application/json' } });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal((await res.json()).choices.length, 1);
  const direct = await fetch(`http://127.0.0.1:${replicas[0].port}/v1/completions`,
    { method: 'POST', body: new ReadableStream({ start(c) { c.enqueue(body); c.close(); } }), duplex: 'half',
      headers: { 'Content-Type': 'application/json' } });
  assert.equal(direct.status, 200, await direct.clone().text());
});

// Each replica's qinfer:generation_tokens_total (0 for one that is gone).
async function generated() {
  return Promise.all(replicas.map(async (r) => {
    if (r.proc.exitCode !== null || r.proc.signalCode !== null) return 0;
    const text = await (await fetch(`http://127.0.0.1:${r.port}/metrics`)).text();
    const m = text.match(/qinfer:generation_tokens_total\{[^}]*\} ([0-9.e+]+)/);
    return m ? Number(m[1]) : 0;
  }));
}

// A hunt finding: nginx counted a replica's 503 (busy: no room for the request) that it retried as a failure, and
// with max_fails=1 the replica left the pool for 10 s: its sessions moved (their prefix caches lost), and with
// every replica busy clients got nginx's 502 "no replica" instead of qinfer's 503 + Retry-After.
test("a busy replica's 503 goes to the next replica and leaves the busy one in the pool", { skip }, async () => {
  const before = await generated();
  await chat('busy');
  const home = (await generated()).findIndex((v, i) => v > before[i]);
  assert.ok(home >= 0, 'the session reached a replica');
  const long = chat('busy', { stream: true, max_tokens: 450 }).then(async (s) => { for await (const _ of s); });
  const running = async () => (await (await fetch(`http://127.0.0.1:${replicas[home].port}/metrics`)).text())
    .match(/qinfer:num_requests_running\{[^}]*\} ([0-9.e+]+)/)[1];
  for (let i = 0; i < 100 && Number(await running()) === 0; ++i) await new Promise((r) => setTimeout(r, 20));
  // 8 completions at once: all of an idle replica's places, one more than its replica has left.
  const wide = await chat('busy', { n: 8 });
  assert.equal(wide.choices.length, 8);
  await long;
  const settled = await generated();
  await chat('busy');
  assert.ok((await generated())[home] > settled[home], 'the session is back on its replica');
});

test('a replica killed between requests: every session is still served', { skip }, async () => {
  const { replica, value } = await busiest('qinfer:generation_tokens_total');
  assert.ok(value > 0);
  await kill(replica);
  const answers = await Promise.all(sessions.map((s) => chat(s)));
  for (const a of answers) assert.equal(a.choices[0].finish_reason, 'length');
});

test('a replica killed mid-stream: streams end (done or an error), none hangs, later requests succeed',
  { skip }, async () => {
    const streams = sessions.map(async (s) => {
      const stream = await chat(s, { stream: true, max_tokens: 400 });
      let n = 0;
      for await (const chunk of stream) n += chunk.choices.length;
      return n;
    }).map((p) => p.then((n) => ({ status: 'done', n }), (e) => ({ status: 'error', e })));  // settled at once
    await new Promise((r) => setTimeout(r, 300));
    const { replica, value } = await busiest('qinfer:num_requests_running');
    assert.ok(value > 0, 'streams are running');
    await kill(replica);
    let timer;
    const deadline = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('a stream hung')), 60000); });
    const settled = await Promise.race([Promise.all(streams), deadline]);
    clearTimeout(timer);
    assert.equal(settled.length, sessions.length);
    const answers = await Promise.all(sessions.map((s) => chat(s)));
    for (const a of answers) assert.equal(a.choices[0].finish_reason, 'length');
  });

// A hunt finding: nginx's own errors were HTML pages the SDK could only show
// as text. Last, as it stops every replica.
test("nginx's own errors come in OpenAI's shape: a body too large, no replica left", { skip }, async () => {
  await assert.rejects(client.completions.create({ model: 'tiny', prompt: 'x'.repeat(9 << 20), max_tokens: 1 }),
    (e) => e.status === 413 && /larger than the proxy allows/.test(e.error.message));
  for (const r of replicas) if (r.proc.exitCode === null && r.proc.signalCode === null) await kill(r);
  await assert.rejects(chat('session-0'), (e) => e.status === 502 && /no qinfer replica/.test(e.error.message));
});
