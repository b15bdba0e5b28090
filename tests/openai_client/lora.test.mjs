// qinfer serve --lora-modules through the official openai client: /v1/models
// lists the adapter with its parent, a request naming it answers what
// `qinfer generate --lora` gives alone while a request for the base model
// beside it answers what `generate` gives without, and another name is the
// SDK's NotFoundError.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import OpenAI from 'openai';
import { qinfer, startServe } from './serve_process.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qinfer-lora-'));
const model = path.join(dir, 'model'), adapter = path.join(dir, 'adapter');
let server, client;

before(async () => {
  execFileSync(qinfer, ['make-test-model', '--preset', 'tiny', '--seed', '7', '--out', model]);
  execFileSync(qinfer, ['make-test-model', '--preset', 'tiny', '--lora', '8', '--out', adapter]);
  const serve = await startServe(['-m', model, '--served-model-name', 'base', '--lora-modules', `sql=${adapter}`,
    '--port', '0', '-t', '2', '--ctx', '512', '--parallel', '4', '--block-size', '4']);
  server = serve.proc;
  client = new OpenAI({ baseURL: serve.url + '/v1', apiKey: 'none', maxRetries: 0 });
});

after(() => {
  if (server && server.exitCode === null) server.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

function generateAlone(lora) {
  const out = execFileSync(qinfer, ['generate', '-m', model, '--prompt-ids', '1,2,3', '-n', '8', '--temp', '0',
    '--ignore-eos', '--json', '-t', '1', ...(lora ? ['--lora', adapter] : [])]);
  return JSON.parse(out.toString());
}

test('models lists the adapter with the model it adapts', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['base', 'sql']);
  assert.equal(models.data[1].parent, 'base');
  assert.equal((await client.models.retrieve('sql')).parent, 'base');
});

test('a request naming the adapter runs with it, beside one for the base model', async () => {
  const body = { prompt: [1, 2, 3], max_tokens: 8, temperature: 0, ignore_eos: true };
  const [adapted, plain] = await Promise.all([
    client.completions.create({ ...body, model: 'sql' }),
    client.completions.create({ ...body, model: 'base' })]);
  const [withAdapter, without] = [generateAlone(true), generateAlone(false)];
  assert.notEqual(withAdapter.text, without.text, 'the adapter changes the greedy reply');
  assert.equal(adapted.model, 'sql');
  assert.equal(adapted.choices[0].text, withAdapter.text);
  assert.equal(plain.model, 'base');
  assert.equal(plain.choices[0].text, without.text);
});

test('a model the server does not serve is NotFoundError', async () => {
  await assert.rejects(client.completions.create({ model: 'sq', prompt: 'hi', max_tokens: 2 }),
    (e) => e instanceof OpenAI.NotFoundError && /the models are 'base', 'sql'/.test(e.message));
});
