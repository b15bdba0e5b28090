// qinfer serve through the official openai npm client (v6, maxRetries 0):
// answers equal `qinfer generate` on the same rendered prompt, streams equal
// JSON answers, usage is exact, errors arrive as the SDK's error classes, 32
// concurrent streams (a quarter aborted) each equal their solo run and leave
// every KV block free, and SIGTERM exits 0.
//   QINFER=build/qinfer node --test tests/openai_client/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import OpenAI from 'openai';
import { root, qinfer, startServe } from './serve_process.mjs';

const modelDir = path.join(root, 'tests/data/models/tiny');
const KEY = 'test-key';

let server, baseURL, client, serverLog;

before(async () => {
  ({ proc: server, url: baseURL, log: serverLog } = await startServe(['-m', modelDir, '--port', '0', '-t', '2',
    '--api-key', KEY, '--ctx', '512', '--parallel', '8', '--block-size', '4', '--max-queue', '64',
    '--allowed-origins', 'http://ui.example,http://other.example']));
  client = new OpenAI({ baseURL: baseURL + '/v1', apiKey: KEY, maxRetries: 0 });
});

after(() => { if (server.exitCode === null) server.kill('SIGKILL'); });

const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Name a prime number.' }];

function generateAlone(prompt, n) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qinfer-'));
  try {
    const file = path.join(dir, 'prompt.txt');
    fs.writeFileSync(file, prompt);
    const out = execFileSync(qinfer, ['generate', '-m', modelDir, '--prompt-file', file, '-n', String(n),
      '--temp', '0', '--ignore-eos', '--json', '-t', '1']);
    return JSON.parse(out.toString());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('models lists the served model', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].id, modelDir);
});

test('models.retrieve; a page of --allowed-origins may call the server (CORS)', async () => {
  const model = await client.models.retrieve(modelDir);  // the id holds '/': the SDK sends it encoded
  assert.equal(model.id, modelDir);
  const preflight = await fetch(baseURL + '/v1/chat/completions', { method: 'OPTIONS', headers: {
    Origin: 'http://other.example', 'Access-Control-Request-Method': 'POST',
    'Access-Control-Request-Headers': 'authorization, content-type' } });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://other.example');
  assert.equal(preflight.headers.get('access-control-allow-headers'), 'authorization, content-type');
  const answer = await fetch(baseURL + '/v1/models', { headers: { Origin: 'http://ui.example',
    Authorization: `Bearer ${KEY}` } });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get('access-control-allow-origin'), 'http://ui.example');
  const stranger = await fetch(baseURL + '/v1/models', { headers: { Origin: 'http://evil.example',
    Authorization: `Bearer ${KEY}` } });
  assert.equal(stranger.headers.get('access-control-allow-origin'), null);
});

test('greedy chat equals qinfer generate on the rendered prompt; stream equals JSON; usage exact', async () => {
  const rendered = execFileSync(qinfer, ['template', '-m', modelDir],
    { input: JSON.stringify({ messages, add_generation_prompt: true }) }).toString();
  const alone = generateAlone(rendered, 16);
  const body = { model: modelDir, messages, max_tokens: 16, temperature: 0, ignore_eos: true };
  const answer = await client.chat.completions.create(body);
  assert.equal(answer.choices[0].message.content, alone.text);
  assert.equal(answer.choices[0].finish_reason, 'length');
  assert.equal(answer.usage.prompt_tokens, alone.prompt_ids.length);
  assert.equal(answer.usage.completion_tokens, 16);
  assert.equal(answer.usage.total_tokens, alone.prompt_ids.length + 16);

  const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  let text = '', role = null, finish = null, usage = null;
  const ids = new Set();
  for await (const chunk of stream) {
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(ids.size, 1);
  assert.equal(role, 'assistant');
  assert.equal(text, alone.text);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 16);
  assert.ok(usage.prompt_tokens_details.cached_tokens > 0, 'the repeated prompt comes from the prefix cache');
});

// vLLM's return_token_ids (RL rollouts train on the ids sampled): each
// choice's ids, and the prompt's; streamed, each chunk's ids and the prompt's
// in the first chunk.
test('return_token_ids: the ids of the answer and of the prompt, streamed alike', async () => {
  const detokenize = async (tokens) => (await (await fetch(baseURL + '/detokenize', { method: 'POST',
    headers: { Authorization: `Bearer ${KEY}` }, body: JSON.stringify({ tokens }) })).json()).prompt;
  const body = { model: modelDir, messages, max_tokens: 12, temperature: 0, ignore_eos: true, return_token_ids: true };
  const chat = await client.chat.completions.create(body);
  assert.equal(chat.choices[0].token_ids.length, chat.usage.completion_tokens);
  assert.equal(await detokenize(chat.choices[0].token_ids), chat.choices[0].message.content);
  assert.equal(chat.prompt_token_ids.length, chat.usage.prompt_tokens);
  const rendered = execFileSync(qinfer, ['template', '-m', modelDir],
    { input: JSON.stringify({ messages, add_generation_prompt: true }) }).toString();
  assert.equal(await detokenize(chat.prompt_token_ids), rendered);
  let ids = [], promptIds = null, chunksWithPromptIds = 0;
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    if (chunk.prompt_token_ids) { promptIds = chunk.prompt_token_ids; ++chunksWithPromptIds; }
    for (const c of chunk.choices) ids = ids.concat(c.token_ids ?? []);
  }
  assert.deepEqual(ids, chat.choices[0].token_ids);
  assert.deepEqual(promptIds, chat.prompt_token_ids);
  assert.equal(chunksWithPromptIds, 1);
  const text = await client.completions.create({ model: modelDir, prompt: 'Once upon', max_tokens: 6, temperature: 0,
    n: 2, return_token_ids: true });
  for (const c of text.choices) {
    assert.equal(await detokenize(c.token_ids), c.text);
    assert.equal(await detokenize(c.prompt_token_ids), 'Once upon');
  }
  const plain = await client.chat.completions.create({ ...body, return_token_ids: false });
  assert.equal(plain.prompt_token_ids, undefined);
  assert.equal(plain.choices[0].token_ids, undefined);
});

test('vLLM\'s cache_salt keeps each tenant\'s cached prompt its own; request_id names the answer', async () => {
  const prompt = 'A prompt long enough to fill several KV blocks of four positions each, said once.';
  const cached = async (extra) => (await client.completions.create({ model: modelDir, prompt, max_tokens: 1,
    ...extra })).usage.prompt_tokens_details.cached_tokens;
  assert.equal(await cached({ cache_salt: 'tenant-a' }), 0);
  assert.ok(await cached({ cache_salt: 'tenant-a' }) > 0, 'the same salt finds its blocks');
  assert.equal(await cached({ cache_salt: 'tenant-b' }), 0);
  assert.equal(await cached({}), 0);
  const named = await client.chat.completions.create({ model: modelDir, messages, max_tokens: 2,
    request_id: 'job-7' });
  assert.equal(named.id, 'chatcmpl-job-7');
  await assert.rejects(client.chat.completions.create({ model: modelDir, messages, max_tokens: 2, priority: 1 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'priority');
});

test('completions: text prompt, id prompt, stop', async () => {
  const a = await client.completions.create({ model: modelDir, prompt: 'Once upon', max_tokens: 8, temperature: 0 });
  const ids = (await (await fetch(baseURL + '/tokenize', {
    method: 'POST', headers: { Authorization: `Bearer ${KEY}` }, body: JSON.stringify({ prompt: 'Once upon' }),
  })).json()).tokens;
  const b = await client.completions.create({ model: modelDir, prompt: ids, max_tokens: 8, temperature: 0 });
  assert.equal(a.choices[0].text, b.choices[0].text);
  assert.equal(a.object, 'text_completion');
  const stop = a.choices[0].text.slice(3, 5);
  const c = await client.completions.create({ model: modelDir, prompt: 'Once upon', max_tokens: 8, temperature: 0, stop });
  assert.equal(c.choices[0].text, a.choices[0].text.slice(0, a.choices[0].text.indexOf(stop)));
  assert.equal(c.choices[0].finish_reason, 'stop');
});

test('truncate_prompt_tokens (vLLM\'s): the answer of the prompt\'s last ids alone; -1 keeps what fits', async () => {
  const prompt = 'Once upon a time there was a king who';
  const ids = (await (await fetch(baseURL + '/tokenize', {
    method: 'POST', headers: { Authorization: `Bearer ${KEY}` }, body: JSON.stringify({ prompt }),
  })).json()).tokens;
  const greedy = { model: modelDir, max_tokens: 8, temperature: 0 };
  const cut = await client.completions.create({ ...greedy, prompt, truncate_prompt_tokens: 4 });
  const alone = await client.completions.create({ ...greedy, prompt: ids.slice(-4) });
  assert.equal(cut.choices[0].text, alone.choices[0].text);
  assert.equal(cut.usage.prompt_tokens, 4);
  const long = await client.completions.create({ ...greedy, prompt: 'x '.repeat(600), truncate_prompt_tokens: -1 });
  assert.equal(long.usage.prompt_tokens, 512 - 8, 'the context (512) less max_tokens');
  await assert.rejects(client.completions.create({ ...greedy, prompt, truncate_prompt_tokens: 0 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'truncate_prompt_tokens');
});

test('echo + logprobs as lm-evaluation-harness asks: each prompt token\'s log-probability, alone or batched', async () => {
  const tokenize = async (prompt) => (await (await fetch(baseURL + '/tokenize', {
    method: 'POST', headers: { Authorization: `Bearer ${KEY}` }, body: JSON.stringify({ prompt }),
  })).json()).tokens;
  const first = await tokenize('The quick brown fox jumps'), second = await tokenize('Once upon a time');
  const loglikelihood = { model: modelDir, temperature: 0, logprobs: 1, echo: true };
  const both = await client.completions.create({ ...loglikelihood, prompt: [first, second], max_tokens: 1 });
  assert.equal(both.choices.length, 2);
  for (const [i, ids] of [first, second].entries()) {
    const lp = both.choices[i].logprobs;
    assert.equal(lp.tokens.length, ids.length + 1, 'the prompt, then the token generated');
    assert.equal(lp.token_logprobs[0], null);
    for (let k = 1; k < lp.tokens.length; ++k) {
      assert.ok(lp.token_logprobs[k] <= 0);
      assert.equal(lp.top_logprobs[k][lp.tokens[k]], lp.token_logprobs[k], 'the token is among its alternatives');
    }
  }
  const alone = await client.completions.create({ ...loglikelihood, prompt: first, max_tokens: 0 });
  assert.deepEqual(alone.choices[0].logprobs.token_logprobs, both.choices[0].logprobs.token_logprobs.slice(0, -1));
  assert.equal(alone.usage.completion_tokens, 0);
  const next = await client.completions.create({ model: modelDir, temperature: 0, logprobs: 1, prompt: first, max_tokens: 1 });
  assert.equal(both.choices[0].text, alone.choices[0].text + next.choices[0].text);
  assert.equal(both.choices[0].logprobs.token_logprobs.at(-1), next.choices[0].logprobs.token_logprobs[0]);
  // vLLM's prompt_logprobs (the SDK passes the extension through): the same log-probabilities, keyed by token id.
  const vllm = await client.completions.create({ model: modelDir, temperature: 0, prompt: first, max_tokens: 1,
    prompt_logprobs: 1 });
  const lists = vllm.choices[0].prompt_logprobs;
  assert.equal(lists.length, first.length);
  assert.equal(lists[0], null);
  for (let k = 1; k < first.length; ++k) {
    assert.equal(lists[k][String(first[k])].logprob, alone.choices[0].logprobs.token_logprobs[k]);
    assert.ok(lists[k][String(first[k])].rank >= 1);
  }
});

test('errors arrive as the SDK error classes', async () => {
  await assert.rejects(client.chat.completions.create({ model: modelDir, messages: [{ role: 'wizard', content: 'x' }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /wizard/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o', messages }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
  await assert.rejects(client.completions.create({ model: modelDir, prompt: 'x', temperature: 9 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  await assert.rejects(client.completions.create({ model: modelDir, prompt: 'x '.repeat(600) }),
    (e) => e instanceof OpenAI.BadRequestError && /maximum context length is 512 tokens/.test(e.message));
  const stranger = new OpenAI({ baseURL: baseURL + '/v1', apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(stranger.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  assert.equal((await fetch(baseURL + '/health')).status, 200);  // open without a key
});

async function streamText(body, signal, abortAfter) {
  const stream = await client.completions.create({ ...body, stream: true }, { signal });
  let text = '', chunks = 0;
  try {
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      if (abortAfter !== undefined && ++chunks >= abortAfter) { stream.controller.abort(); break; }
    }
  } catch (e) {
    if (!(e instanceof OpenAI.APIUserAbortError)) throw e;
  }
  return text;
}

test('32 concurrent streams equal their solo runs; aborted ones free their blocks', async () => {
  const bodies = Array.from({ length: 32 }, (_, i) => ({
    model: modelDir,
    prompt: `Request ${i}: ` + 'lorem ipsum '.repeat(i % 5),
    max_tokens: 8 + (i % 7) * 4,
    ignore_eos: true,
    ...(i % 2 ? { temperature: 0.9, top_k: 50, seed: 1000 + i } : { temperature: 0 }),
  }));
  const solo = [];
  for (const b of bodies) solo.push(await streamText(b));
  const results = await Promise.all(bodies.map((b, i) => streamText(b, undefined, i % 4 === 3 ? 3 : undefined)));
  for (let i = 0; i < bodies.length; ++i) {
    if (i % 4 === 3) assert.ok(solo[i].startsWith(results[i]), `aborted stream ${i} is a prefix of its solo run`);
    else assert.equal(results[i], solo[i], `stream ${i}`);
  }
  let metrics = '';
  for (let i = 0; i < 100; ++i) {
    metrics = await (await fetch(baseURL + '/metrics')).text();
    if (/qinfer:num_requests_running\{[^}]*\} 0\n/.test(metrics) && /qinfer:kv_cache_usage_perc\{[^}]*\} 0\n/.test(metrics)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.match(metrics, /qinfer:num_requests_running\{[^}]*\} 0\n/);
  assert.match(metrics, /qinfer:num_requests_waiting\{[^}]*\} 0\n/);
  assert.match(metrics, /qinfer:kv_cache_usage_perc\{[^}]*\} 0\n/);
  assert.match(metrics, /qinfer:time_to_first_token_seconds_count\{[^}]*\} [1-9]/);
});
// vLLM's sampling extras, as its clients send them (extra body fields).
test('stop_token_ids, min_tokens, include_stop_str_in_output, allowed_token_ids, stop_reason, bad_words', async () => {
  const base = { model: modelDir, prompt: 'Count: one, two,', max_tokens: 24, temperature: 0 };
  const free = await client.completions.create({ ...base, logprobs: 0 });
  // A stop id ends the text where it first appears, its text left out as vLLM leaves it (kept when asked).
  const tokens = free.choices[0].logprobs.tokens;
  assert.ok(tokens.length >= 6, JSON.stringify(tokens));
  const { tokens: [stopId] } = await fetch(baseURL + '/tokenize', { method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: modelDir, prompt: tokens[3], add_special_tokens: false }) }).then((r) => r.json());
  const stopped = await client.completions.create({ ...base, stop_token_ids: [stopId] });
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  assert.equal(stopped.choices[0].stop_reason, stopId);  // vLLM's: which stop ended it
  assert.equal(free.choices[0].stop_reason, null);
  // An eos that is also a stop id: null, as vLLM (eos first). 151645 is <|im_end|>.
  const eos = await client.completions.create({ ...base, allowed_token_ids: [151645], stop_token_ids: [151645] });
  assert.equal(eos.choices[0].finish_reason, 'stop');
  assert.equal(eos.choices[0].stop_reason, null);
  assert.equal(stopped.choices[0].text, tokens.slice(0, 3).join(''));
  const stopKept = await client.completions.create({ ...base, stop_token_ids: [stopId], include_stop_str_in_output: true });
  assert.equal(stopKept.choices[0].text, tokens.slice(0, 4).join(''));
  // skip_special_tokens: false shows special tokens, except an eos that ended the text (unless asked for).
  const specials = { ...base, max_tokens: 2, allowed_token_ids: [151645], skip_special_tokens: false };
  const shown = (await client.completions.create({ ...specials, ignore_eos: true, logprobs: 0 })).choices[0];
  assert.equal(shown.text, '<|im_end|><|im_end|>');
  assert.deepEqual(shown.logprobs.text_offset, [0, 10]);  // offsets count the text shown
  assert.equal((await client.completions.create({ ...specials, ignore_eos: true, skip_special_tokens: true }))
    .choices[0].text, '');
  assert.equal((await client.completions.create(specials)).choices[0].text, '');
  assert.equal((await client.completions.create({ ...specials, include_stop_str_in_output: true })).choices[0].text,
    '<|im_end|>');
  await assert.rejects(client.completions.create({ ...base, skip_special_tokens: 'no' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'skip_special_tokens');
  await client.completions.create({ ...base, max_tokens: 1, spaces_between_special_tokens: false });
  // min_tokens: not before the 10th token.
  const later = await client.completions.create({ ...base, stop_token_ids: [stopId], min_tokens: 10 });
  assert.ok(later.usage.completion_tokens >= 10, JSON.stringify(later.usage));
  // A stop string, kept at the end when asked.
  const stop = tokens[4];
  const plain = await client.completions.create({ ...base, stop: [stop] });
  const kept = await client.completions.create({ ...base, stop: [stop], include_stop_str_in_output: true });
  assert.equal(kept.choices[0].text, plain.choices[0].text + stop);
  assert.equal(plain.choices[0].stop_reason, stop);
  let last;
  for await (const chunk of await client.completions.create({ ...base, stop: [stop], stream: true })) last = chunk;
  assert.equal(last.choices[0].finish_reason, 'stop');
  assert.equal(last.choices[0].stop_reason, stop);
  // allowed_token_ids: only those.
  const allowed = await client.completions.create({ ...base, max_tokens: 8, allowed_token_ids: [stopId] });
  assert.equal(allowed.choices[0].text, tokens[3].repeat(8));
  await assert.rejects(client.completions.create({ ...base, min_tokens: 30 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'min_tokens');
  // bad_words: the ids that spell the free text's 4th token never come after its first three.
  const banned = await client.completions.create({ ...base, logprobs: 0, bad_words: [tokens[3].trim() || tokens[3]] });
  assert.deepEqual(banned.choices[0].logprobs.tokens.slice(0, 3), tokens.slice(0, 3));
  assert.notEqual(banned.choices[0].text, free.choices[0].text);
  await assert.rejects(client.completions.create({ ...base, bad_words: 'x' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'bad_words');
  // Bans that leave nothing to draw at the second token ("hello", then neither "hello" nor " there"): a 400.
  await assert.rejects(client.completions.create({ ...base, allowed_token_ids: [14990, 1052],
    bad_words: ['hellohello', 'there'] }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'bad_words' && /nothing can be drawn/.test(e.message));
});


test('SIGTERM: the server finishes and exits 0', async () => {
  const exited = new Promise((resolve) => server.on('exit', (code, signal) => resolve({ code, signal })));
  server.kill('SIGTERM');
  const { code } = await exited;
  assert.equal(code, 0);
  assert.match(serverLog(), /stopped/);
});

