// /v1/embeddings through the official openai npm client, on a checkpoint laid
// out as Qwen3-Embedding ships (make-test-model --embedding): the SDK's
// default base64 answer decodes to exactly what `qinfer embed` prints, the
// float answer too, `dimensions` truncates and renormalizes, and bad requests
// arrive as the SDK's error classes.
//   QINFER=build/qinfer node --test tests/openai_client/embeddings.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import OpenAI from 'openai';
import { qinfer, startServe } from './serve_process.mjs';

const modelDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'qinfer-embed-')), 'm');
const texts = ['The capital of France is Paris.', 'What is the capital of France?', 'Hi', ''];
let server, client;

before(async () => {
  execFileSync(qinfer, ['make-test-model', '--preset', 'tiny', '--embedding', '--out', modelDir]);
  const serve = await startServe(['-m', modelDir, '--port', '0', '-t', '2', '--parallel', '4']);
  server = serve.proc;
  client = new OpenAI({ baseURL: serve.url + '/v1', apiKey: 'none', maxRetries: 0 });
});

after(() => {
  if (server && server.exitCode === null) server.kill('SIGKILL');
  fs.rmSync(path.dirname(modelDir), { recursive: true, force: true });
});

function embedAlone(args) {
  const out = execFileSync(qinfer, ['embed', '-m', modelDir, '-t', '1', ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  return out.toString().trim().split('\n').map((line) => JSON.parse(line));
}

test('the default (base64) and float answers equal qinfer embed, usage counts the appended token', async () => {
  const alone = embedAlone(texts);
  const b64 = await client.embeddings.create({ model: modelDir, input: texts });
  const floats = await client.embeddings.create({ model: modelDir, input: texts, encoding_format: 'float' });
  assert.equal(b64.object, 'list');
  assert.equal(b64.data.length, texts.length);
  for (let i = 0; i < texts.length; ++i) {
    assert.equal(b64.data[i].index, i);
    assert.deepEqual(Array.from(b64.data[i].embedding), alone[i].embedding, `text ${i}`);
    assert.deepEqual(floats.data[i].embedding, alone[i].embedding, `text ${i}`);
  }
  const tokens = alone.reduce((sum, a) => sum + a.prompt_tokens, 0);
  assert.equal(b64.usage.prompt_tokens, tokens);
  assert.equal(b64.usage.total_tokens, tokens);
  assert.equal(alone[3].prompt_tokens, 1);  // '' is <|endoftext|> alone
});

test('dimensions keeps the first values, renormalized', async () => {
  const r = await client.embeddings.create({ model: modelDir, input: 'Hi', dimensions: 8 });
  assert.equal(r.data[0].embedding.length, 8);
  const norm = Math.hypot(...r.data[0].embedding);
  assert.ok(Math.abs(norm - 1) < 1e-6, `norm ${norm}`);
  assert.deepEqual(Array.from(r.data[0].embedding), embedAlone(['--dimensions', '8', 'Hi'])[0].embedding);
});

test('bad requests arrive as the SDK error classes', async () => {
  await assert.rejects(client.embeddings.create({ model: modelDir, input: [] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'input');
  await assert.rejects(client.embeddings.create({ model: modelDir, input: 'x', dimensions: 10000 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'dimensions');
  await assert.rejects(client.embeddings.create({ model: 'another-model', input: 'x' }),
    (e) => e instanceof OpenAI.NotFoundError);
});
