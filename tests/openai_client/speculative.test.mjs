// `qinfer serve --draft 4` (speculative decoding by prompt lookup) through the
// official openai client: a scripted checkpoint asked to repeat a text shown
// in the prompt confirms the drafts copied from it, several tokens a step;
// the reply, streamed or not, is the script, and /metrics counts the drafts.
// Then `--draft-model`: a draft model of the same script is always right.
//   QINFER=build/qinfer node --test tests/openai_client/speculative.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import OpenAI from 'openai';
import { qinfer, startServe } from './serve_process.mjs';

const SCRIPT = 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen';
const messages = [{ role: 'user', content: `Repeat this text exactly:\n${SCRIPT}` }];
let dir, server, url, client;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qinfer-draft-'));
  execFileSync(qinfer, ['make-test-model', '--preset', 'tiny', '--out', path.join(dir, 'm'), '--script', SCRIPT]);
  ({ proc: server, url } = await startServe(['-m', path.join(dir, 'm'), '--served-model-name', 'scripted', '--port',
    '0', '-t', '1', '--ctx', '1024', '--parallel', '2', '--draft', '4']));
  client = new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0 });
});

after(() => {
  if (server && server.exitCode === null) server.kill('SIGKILL');
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function metric(name, from = url) {
  const text = await (await fetch(from + '/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(name + '{'));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.split(' ').pop());
}

test('the reply is the script, streamed or not, and the drafts were confirmed', async () => {
  const reply = await client.chat.completions.create({ model: 'scripted', messages, max_tokens: 40 });
  assert.equal(reply.choices[0].message.content, SCRIPT);
  assert.equal(reply.choices[0].finish_reason, 'stop');
  const accepted = await metric('qinfer:spec_decode_num_accepted_tokens_total');
  assert.ok(accepted >= 8, `accepted ${accepted}`);
  assert.ok(await metric('qinfer:spec_decode_num_draft_tokens_total') >= accepted);

  const stream = await client.chat.completions.create({
    model: 'scripted', messages, max_tokens: 40, stream: true, logprobs: true,
    stream_options: { include_usage: true },
  });
  let text = '', tokens = 0, usage;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const delta = chunk.choices[0]?.delta;
    if (delta?.content) text += delta.content;
    tokens += chunk.choices[0]?.logprobs?.content?.length ?? 0;
  }
  assert.equal(text, SCRIPT);
  assert.equal(tokens, usage.completion_tokens, 'a log-probability per token');
  assert.ok(await metric('qinfer:spec_decode_num_accepted_tokens_total') >= 2 * accepted);
});

test('a draft model that agrees gives the same reply, its drafts confirmed', async () => {
  execFileSync(qinfer, ['make-test-model', '--preset', 'tiny', '--out', path.join(dir, 'd'), '--script', SCRIPT]);
  const { proc, url: drafted, log } = await startServe(['-m', path.join(dir, 'm'), '--served-model-name', 'scripted',
    '--port', '0', '-t', '1', '--ctx', '1024', '--parallel', '2', '--draft-model', path.join(dir, 'd')]);
  try {
    const c = new OpenAI({ baseURL: drafted + '/v1', apiKey: 'none', maxRetries: 0 });
    const asked = { model: 'scripted', messages: [{ role: 'user', content: 'Say it\n' }], max_tokens: 40 };
    const [a, b] = await Promise.all([c.chat.completions.create(asked), c.completions.create({
      model: 'scripted', prompt: 'Say it\n', max_tokens: 40, temperature: 0,
    })]);
    assert.equal(a.choices[0].message.content, SCRIPT);
    assert.equal(b.choices[0].text, SCRIPT);
    const accepted = await metric('qinfer:spec_decode_num_accepted_tokens_total', drafted);
    assert.ok(accepted >= 16, `accepted ${accepted}`);
    assert.match(log(), /ready: model 'scripted' drafted by \S+\/d, /);
  } finally {
    proc.kill('SIGKILL');
  }
});
