// Reasoning and tool calls through the official openai client, on scripted
// checkpoints (`qinfer make-test-model --script TEXT`: weights whose reply to
// any chat prompt is TEXT, then <|im_end|>), so the server's split of
// <think>...</think> into reasoning_content and <tool_call>{json}</tool_call>
// into tool_calls is checked on tokens a model really emits, streamed and not.
//   QINFER=build/qinfer node --test tests/openai_client/reasoning_tools.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { qinfer, startServe } from './serve_process.mjs';

// The next token depends only on the current one, so no token of a script may
// recur before a different one: hence the unusual JSON spacing.
const REASONING = 'The user wants the weather in Paris.';
const CALL_JSON = '{"name": "get_weather","arguments":{"city":"Paris"}}';
const TOOL_SCRIPT = `<think>${REASONING}</think>\n\n<tool_call>${CALL_JSON}</tool_call>`;
const ANSWER_REASONING = 'Two plus two makes four.';
const ANSWER = 'The answer is 4';
const ANSWER_SCRIPT = `<think>${ANSWER_REASONING}</think>\n\n${ANSWER}`;

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
const weatherQuestion = [{ role: 'user', content: 'What is the weather in Paris?' }];
const sumQuestion = [{ role: 'user', content: 'What is 2+2?' }];
const TAGS = /<\/?think>|<\/?tool_call>/;
// Qwen3-Coder's XML call, in a form whose tokens each have one successor (a
// function and parameter left open, as vLLM's qwen3_coder parser takes them
// too), served with that model's chat template, which teaches the XML form.
const CODER_CONTENT = 'I will look.';
const CODER_SCRIPT = `${CODER_CONTENT}<tool_call><function=get_weather><parameter=days>3</tool_call>`;
const CODER_TEMPLATE = fileURLToPath(new URL('../data/chat_template/qwen3_coder.jinja', import.meta.url));
const coderTools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'Forecast',
    parameters: { type: 'object', properties: { days: { type: 'integer' } }, required: ['days'] },
  },
}];

// A Qwen3-Coder call whose string value is long text (an agent writing a file).
const SAVED_TEXT = 'Hello from a streamed file body written slowly';
const SAVE_SCRIPT = `Saving.<tool_call><function=save><parameter=text>${SAVED_TEXT}</tool_call>`;
const saveTools = [{
  type: 'function',
  function: { name: 'save', parameters: { type: 'object', properties: { text: { type: 'string' } } } },
}];

const servers = [];
const dirs = [];

async function serveScript(script, chatTemplate = null, flags = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qinfer-scripted-'));
  dirs.push(dir);
  execFileSync(qinfer, ['make-test-model', '--preset', 'tiny', '--out', path.join(dir, 'm'), '--script', script]);
  if (chatTemplate) fs.copyFileSync(chatTemplate, path.join(dir, 'm', 'chat_template.jinja'));
  const { proc, url, log } = await startServe(['-m', path.join(dir, 'm'), '--served-model-name', 'scripted',
    '--port', '0', '-t', '1', '--ctx', '1024', '--parallel', '2', ...flags]);
  servers.push(proc);
  return { url, log, client: new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0 }) };
}

let toolServer, answerServer, coderServer, aroundServer, bareServer, saveServer;
// Text on both sides of a call, as a model that explains itself writes it.
const AROUND_SCRIPT = `Let me look:<tool_call>${CALL_JSON}</tool_call>Then done`;
// Qwen3-Coder's bare call (no <tool_call> before it), its function left open
// and closed by the next <tool_call>, which opens nothing but text.
const BARE_SCRIPT = 'Let me look:<function=Glob><parameter=pattern>*.md</tool_call><tool_call>Then done';

before(async () => {
  [toolServer, answerServer, coderServer, aroundServer, bareServer, saveServer] = await Promise.all([
    serveScript(TOOL_SCRIPT), serveScript(ANSWER_SCRIPT, null, ['--ignore-unknown-fields']),
    serveScript(CODER_SCRIPT, CODER_TEMPLATE), serveScript(AROUND_SCRIPT), serveScript(BARE_SCRIPT, CODER_TEMPLATE),
    serveScript(SAVE_SCRIPT, CODER_TEMPLATE)]);
});

after(() => {
  for (const p of servers) if (p.exitCode === null) p.kill('SIGKILL');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function tokenCount(server, text) {
  const r = await fetch(server.url + '/tokenize', { method: 'POST', body: JSON.stringify({ prompt: text }) });
  return (await r.json()).count;
}

// A stream's deltas, put together the way a client does: reasoning and
// content concatenated, tool calls assembled piece by piece by their index.
async function collectStream(client, body) {
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const out = { reasoning: '', content: '', calls: [], finish: null, role: null, ids: new Set(), contentPieces: [],
    reasoningPieces: 0, argumentPieces: 0, usages: [] };
  for await (const chunk of stream) {
    out.ids.add(chunk.id);
    if (chunk.usage) out.usages.push(chunk.usage);
    for (const c of chunk.choices) {
      const d = c.delta;
      if (d.role) out.role = d.role;
      if (d.reasoning_content) { out.reasoning += d.reasoning_content; ++out.reasoningPieces; }
      if (typeof d.content === 'string') { out.content += d.content; out.contentPieces.push(d.content); }
      for (const t of d.tool_calls ?? []) {
        const call = (out.calls[t.index] ??= { id: '', type: '', function: { name: '', arguments: '' } });
        if (t.id) call.id += t.id;
        if (t.type) call.type = t.type;
        if (t.function?.name) call.function.name += t.function.name;
        if (t.function?.arguments) { call.function.arguments += t.function.arguments; ++out.argumentPieces; }
      }
      if (c.finish_reason) out.finish = c.finish_reason;
    }
  }
  return out;
}

function assertWeatherCall(calls) {
  assert.equal(calls.length, 1);
  const [call] = calls;
  assert.equal(call.type, 'function');
  assert.ok(typeof call.id === 'string' && call.id.length > 0, 'a tool call has an id');
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof call.function.arguments, 'string', 'arguments are a JSON string, as OpenAI sends them');
  assert.deepEqual(JSON.parse(call.function.arguments), JSON.parse(CALL_JSON).arguments);
}

test('the tool script holds the call the tests expect', () => {
  assert.deepEqual(JSON.parse(CALL_JSON), { name: 'get_weather', arguments: { city: 'Paris' } });
});

test('tool call: reasoning apart, no raw tags, tool_calls parsed, finish_reason tool_calls, usage exact', async () => {
  const r = await toolServer.client.chat.completions.create({ model: 'scripted', messages: weatherQuestion, tools,
    temperature: 0 });
  const [choice] = r.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.role, 'assistant');
  assert.equal(choice.message.reasoning_content, REASONING);
  assert.ok(!choice.message.content, `no content beside the call, got ${JSON.stringify(choice.message.content)}`);
  assertWeatherCall(choice.message.tool_calls);
  // Every token of the script, then <|im_end|>.
  assert.equal(r.usage.completion_tokens, (await tokenCount(toolServer, TOOL_SCRIPT)) + 1);
});

test('tool call streamed: the deltas add up to the JSON answer, never a raw tag', async () => {
  const body = { model: 'scripted', messages: weatherQuestion, tools, temperature: 0 };
  const whole = (await toolServer.client.chat.completions.create(body)).choices[0].message;
  const s = await collectStream(toolServer.client, body);
  assert.equal(s.ids.size, 1);
  assert.equal(s.role, 'assistant');
  assert.equal(s.finish, 'tool_calls');
  assert.equal(s.reasoning, whole.reasoning_content);
  assert.equal(s.reasoningPieces, await tokenCount(toolServer, REASONING),
    'reasoning streams a delta per token, however the tokens reach the HTTP thread');
  for (const piece of s.contentPieces) assert.doesNotMatch(piece, TAGS);
  assert.equal(s.content, whole.content ?? '');
  assertWeatherCall(s.calls);
  assert.equal(s.calls[0].function.name, whole.tool_calls[0].function.name);
  assert.equal(s.calls[0].function.arguments, whole.tool_calls[0].function.arguments);
  assert.match(s.calls[0].id, /^call_/);
  assert.ok(s.argumentPieces > 1, `the arguments stream as they are written (${s.argumentPieces} pieces)`);
});

test('tool call streamed: the SDK\'s stream helper sees the arguments grow, then the whole call', async () => {
  const deltas = [];
  let done = null;
  const stream = toolServer.client.chat.completions.stream({ model: 'scripted', messages: weatherQuestion,
    tools: [{ ...tools[0], function: { ...tools[0].function, strict: true } }], temperature: 0 });
  stream.on('tool_calls.function.arguments.delta', (e) => deltas.push(e));
  stream.on('tool_calls.function.arguments.done', (e) => { done = e; });
  const final = await stream.finalChatCompletion();
  assert.ok(deltas.length > 1, `${deltas.length} argument deltas`);
  for (const d of deltas) assert.equal(d.name, 'get_weather', 'the name comes first, with the call');
  assert.equal(deltas.map((d) => d.arguments_delta).join(''), done.arguments);
  assert.deepEqual(done.parsed_arguments, JSON.parse(CALL_JSON).arguments);
  assertWeatherCall(final.choices[0].message.tool_calls);
});

test('enable_thinking: false continues after the empty think block: the call alone', async () => {
  const body = { model: 'scripted', messages: weatherQuestion, tools, temperature: 0,
    chat_template_kwargs: { enable_thinking: false } };
  const [choice] = (await toolServer.client.chat.completions.create(body)).choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.reasoning_content, undefined);
  assert.ok(!choice.message.content);
  assertWeatherCall(choice.message.tool_calls);
  const s = await collectStream(toolServer.client, body);
  assert.equal(s.reasoning, '');
  assert.equal(s.finish, 'tool_calls');
  assertWeatherCall(s.calls);
});

test('a follow-up turn with the assistant tool call and the tool result is accepted', async () => {
  const first = await toolServer.client.chat.completions.create({ model: 'scripted', messages: weatherQuestion, tools,
    temperature: 0 });
  const call = first.choices[0].message.tool_calls[0];
  const followUp = [...weatherQuestion, first.choices[0].message,
    { role: 'tool', tool_call_id: call.id, content: '{"temperature_c": 18, "sky": "clear"}' }];
  const second = await toolServer.client.chat.completions.create({ model: 'scripted', messages: followUp, tools,
    temperature: 0 });
  assert.equal(second.choices.length, 1);
  // The call and its result are in the prompt: it grew by more than the tool result's tokens.
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens + 10,
    `${second.usage.prompt_tokens} vs ${first.usage.prompt_tokens}`);
  assert.equal(second.choices[0].finish_reason, 'tool_calls');  // the script calls the tool again
});

test('plain answer: reasoning, then content, finish_reason stop; streamed alike', async () => {
  const body = { model: 'scripted', messages: sumQuestion, temperature: 0 };
  const answer = await answerServer.client.chat.completions.create(body);
  const [choice] = answer.choices;
  // <think>, the reasoning's tokens, </think>: as OpenAI counts the tokens a reply spent reasoning.
  assert.equal(answer.usage.completion_tokens_details.reasoning_tokens,
    (await tokenCount(answerServer, ANSWER_REASONING)) + 2);
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(choice.message.reasoning_content, ANSWER_REASONING);
  assert.equal(choice.message.content, ANSWER);
  assert.equal(choice.message.tool_calls, undefined);
  const s = await collectStream(answerServer.client, body);
  assert.equal(s.finish, 'stop');
  assert.equal(s.reasoning, ANSWER_REASONING);
  assert.equal(s.content, ANSWER);
  for (const piece of s.contentPieces) assert.doesNotMatch(piece, TAGS);
  assert.equal(s.calls.length, 0);
  // A hunt finding: a reply cut inside its reasoning had content "" whole and null streamed (the stream sends
  // no content); OpenAI and vLLM have null.
  const cut = { ...body, max_tokens: 4 };
  const whole = await answerServer.client.chat.completions.create(cut);
  assert.equal(whole.choices[0].finish_reason, 'length');
  assert.ok(whole.choices[0].message.reasoning_content.length > 0);
  assert.equal(whole.choices[0].message.content, null);
  const streamed = await answerServer.client.chat.completions.stream(cut).finalChatCompletion();
  assert.equal(streamed.choices[0].message.content, null);
});

// vLLM's thinking_token_budget: the reasoning holds the budget's tokens, then
// </think> comes (forced) and the script's answer follows.
test('thinking_token_budget: the reasoning is cut after that many tokens and the answer follows', async () => {
  const post = (route, body) => fetch(answerServer.url + route, { method: 'POST', body: JSON.stringify(body) })
    .then((r) => r.json());
  const { tokens } = await post('/tokenize', { prompt: ANSWER_REASONING });
  const { prompt: firstThree } = await post('/detokenize', { tokens: tokens.slice(0, 3) });
  const body = { model: 'scripted', messages: sumQuestion, temperature: 0, thinking_token_budget: 3 };
  const answer = await answerServer.client.chat.completions.create(body);
  const [choice] = answer.choices;
  assert.equal(choice.message.reasoning_content, firstThree);
  assert.equal(answer.usage.completion_tokens_details.reasoning_tokens, 3 + 2);
  assert.equal(choice.message.content, ANSWER);
  assert.equal(choice.finish_reason, 'stop');
  const none = await answerServer.client.chat.completions.create({ ...body, thinking_token_budget: 0 });
  assert.equal(none.choices[0].message.reasoning_content ?? '', '');
  assert.equal(none.choices[0].message.content, ANSWER);
});

// vLLM's include_reasoning: false keeps the reasoning out of the answer (the
// model still reasons, and usage counts it).
test('include_reasoning: false: the content alone, the reasoning still counted; streamed alike', async () => {
  const body = { model: 'scripted', messages: sumQuestion, temperature: 0, include_reasoning: false };
  const answer = await answerServer.client.chat.completions.create(body);
  assert.equal(answer.choices[0].message.reasoning_content, undefined);
  assert.equal(answer.choices[0].message.content, ANSWER);
  assert.equal(answer.usage.completion_tokens_details.reasoning_tokens,
    (await tokenCount(answerServer, ANSWER_REASONING)) + 2);
  const s = await collectStream(answerServer.client, body);
  assert.equal(s.reasoningPieces, 0);
  assert.equal(s.content, ANSWER);
  assert.equal(s.finish, 'stop');
  // The reasoning's tokens are left out of the logprobs too: those of the answer's alone.
  const withLogprobs = await answerServer.client.chat.completions.create({ ...body, logprobs: true });
  const joined = withLogprobs.choices[0].logprobs.content.map((t) => t.token).join('|');
  assert.ok(joined.replaceAll('|', '').includes(ANSWER), joined);
  assert.ok(!joined.includes('Two') && !joined.includes('think'), joined);
});

// A review finding: text a stop string held back, released at the end, counted
// as one more reasoning token than the reply had.
test('reasoning_tokens: text held back by a stop string is no extra token', async () => {
  const cut = '<think>Two plus two makes four.';
  const answer = await answerServer.client.chat.completions.create({ model: 'scripted', messages: sumQuestion,
    temperature: 0, max_tokens: await tokenCount(answerServer, cut), stop: ['four.x'] });
  assert.equal(answer.choices[0].message.reasoning_content, 'Two plus two makes four.');
  assert.equal(answer.usage.completion_tokens_details.reasoning_tokens, answer.usage.completion_tokens);
});

// vLLM's stream_options.continuous_usage_stats: every chunk has the usage so
// far; the last (choices empty) the whole request's, as without it.
test('continuous_usage_stats: each chunk carries the tokens so far, ending at the answer\'s', async () => {
  const body = { model: 'scripted', messages: sumQuestion, temperature: 0,
    stream_options: { include_usage: true, continuous_usage_stats: true } };
  const whole = await answerServer.client.chat.completions.create({ model: 'scripted', messages: sumQuestion,
    temperature: 0 });
  const s = await collectStream(answerServer.client, body);
  assert.equal(s.content, ANSWER);
  assert.ok(s.usages.length > 3, `usage in every chunk (${s.usages.length})`);
  assert.equal(s.usages[0].completion_tokens, 0);  // the role's chunk
  for (let i = 1; i < s.usages.length; ++i) {
    assert.equal(s.usages[i].prompt_tokens, whole.usage.prompt_tokens);
    assert.ok(s.usages[i].completion_tokens >= s.usages[i - 1].completion_tokens);
    assert.equal(s.usages[i].total_tokens, s.usages[i].prompt_tokens + s.usages[i].completion_tokens);
  }
  const last = s.usages.at(-1);
  assert.equal(last.completion_tokens, whole.usage.completion_tokens);
  assert.equal(last.completion_tokens_details.reasoning_tokens, whole.usage.completion_tokens_details.reasoning_tokens);
  assert.equal(s.usages.at(-2).completion_tokens, whole.usage.completion_tokens);  // the finishing chunk's
});

// Clients written for other servers send their own sampling fields
// (SillyTavern's typical_p, mirostat_mode, ...): refused as OpenAI refuses
// them, or with --ignore-unknown-fields dropped and logged as vLLM does.
test('--ignore-unknown-fields: other servers\' fields are dropped and logged; without it a 400 names them', async () => {
  const extra = { typical_p: 0.9, mirostat_mode: 2, tfs: 1 };
  const body = { model: 'scripted', messages: sumQuestion, temperature: 0 };
  const plain = await answerServer.client.chat.completions.create(body);
  const lenient = await answerServer.client.chat.completions.create({ ...body, ...extra });
  assert.equal(lenient.choices[0].message.content, plain.choices[0].message.content);
  assert.equal(lenient.choices[0].message.reasoning_content, plain.choices[0].message.reasoning_content);
  assert.match(answerServer.log(), /ignored the request fields "typical_p", "mirostat_mode", "tfs"\n/);
  // A field's name goes to the log as a JSON string: no line or escape code of the client's.
  await answerServer.client.chat.completions.create({ ...body, 'x\n[serve] forged\u001b[31m': 1 });
  assert.match(answerServer.log(), /ignored the request fields "x\\n\[serve\] forged\\u001b\[31m"\n/);
  assert.doesNotMatch(answerServer.log(), /^\[serve\] forged/m);
  const text = await answerServer.client.completions.create({ model: 'scripted', prompt: 'x', max_tokens: 2,
    typical_p: 0.5 });
  assert.equal(text.choices.length, 1);
  const response = await answerServer.client.responses.create({ model: 'scripted', input: 'x', max_output_tokens: 2,
    top_a: 0.5 });
  assert.equal(response.object, 'response');
  assert.match(answerServer.log(), /ignored the request fields "top_a"\n/);
  // Fields it knows are still checked: a misspelt known one's value too.
  await assert.rejects(answerServer.client.chat.completions.create({ ...body, ...extra, temperature: 'hot' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  await assert.rejects(toolServer.client.chat.completions.create({ ...body, ...extra }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'typical_p' && /Unrecognized/.test(e.message));
});

// OpenAI's predicted outputs: the engine drafts from the prediction, which
// changes the speed, never the answer; usage says how many of its tokens the
// answer confirmed and how many drafted ones it did not.
test('prediction: the same answer; a right one is confirmed, an edited one partly', async () => {
  const body = { model: 'scripted', messages: sumQuestion, temperature: 0 };
  const plain = await answerServer.client.chat.completions.create(body);
  const scriptTokens = await tokenCount(answerServer, ANSWER_SCRIPT);
  const right = await answerServer.client.chat.completions.create({ ...body,
    prediction: { type: 'content', content: ANSWER_SCRIPT } });
  assert.equal(right.choices[0].message.content, plain.choices[0].message.content);
  assert.equal(right.choices[0].message.reasoning_content, plain.choices[0].message.reasoning_content);
  assert.equal(right.usage.completion_tokens, plain.usage.completion_tokens);
  const details = right.usage.completion_tokens_details;
  assert.ok(details.accepted_prediction_tokens >= scriptTokens / 2, JSON.stringify(details));
  assert.equal(details.rejected_prediction_tokens, 0);
  assert.equal(plain.usage.completion_tokens_details.accepted_prediction_tokens, undefined);
  // A stop string cuts the answer after the engine drew more: only the kept tokens count.
  const cut = await answerServer.client.chat.completions.create({ ...body, stop: [' makes'],
    prediction: { type: 'content', content: ANSWER_SCRIPT } });
  assert.equal(cut.choices[0].finish_reason, 'stop');
  assert.ok(cut.usage.completion_tokens_details.accepted_prediction_tokens < cut.usage.completion_tokens,
    JSON.stringify(cut.usage));
  const edited = ANSWER_SCRIPT.replace('four', 'five');
  const parts = [{ type: 'text', text: edited.slice(0, 10) }, { type: 'text', text: edited.slice(10) }];
  for (const content of [edited, parts]) {
    const partly = await answerServer.client.chat.completions.create({ ...body, prediction: { type: 'content', content } });
    assert.equal(partly.choices[0].message.content, plain.choices[0].message.content);
    assert.equal(partly.choices[0].message.reasoning_content, plain.choices[0].message.reasoning_content);
    const d = partly.usage.completion_tokens_details;
    assert.ok(d.accepted_prediction_tokens > 0 && d.rejected_prediction_tokens > 0, JSON.stringify(d));
  }
  const s = await collectStream(answerServer.client, { ...body, prediction: { type: 'content', content: edited } });
  assert.equal(s.content, plain.choices[0].message.content);
  assert.equal(s.reasoning, plain.choices[0].message.reasoning_content);
  for (const prediction of [{ type: 'content' }, { type: 'text', content: 'x' },
    { type: 'content', content: 'x', extra: 1 }, 'x'])
    await assert.rejects(answerServer.client.chat.completions.create({ ...body, prediction }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'prediction', JSON.stringify(prediction));
  for (const content of [5, null, [{ type: 'image_url' }]])
    await assert.rejects(answerServer.client.chat.completions.create({ ...body, prediction: { type: 'content', content } }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'prediction.content', JSON.stringify(content));
});

test('plain answer with enable_thinking: false: the content alone', async () => {
  const body = { model: 'scripted', messages: sumQuestion, chat_template_kwargs: { enable_thinking: false } };
  const [choice] = (await answerServer.client.chat.completions.create(body)).choices;  // default sampling
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(choice.message.reasoning_content, undefined);
  assert.equal(choice.message.content, ANSWER);
});

test('continue_final_message: the reply goes on with the assistant message the request began', async () => {
  const [start, rest] = [ANSWER.slice(0, ANSWER.indexOf(' is')), ANSWER.slice(ANSWER.indexOf(' is'))];
  const body = { model: 'scripted', messages: [...sumQuestion, { role: 'assistant', content: start }],
    continue_final_message: true, temperature: 0 };
  const [choice] = (await answerServer.client.chat.completions.create(body)).choices;
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(choice.message.reasoning_content, undefined);
  assert.equal(choice.message.content, rest);
  const s = await collectStream(answerServer.client, body);
  assert.equal(s.content, rest);
  assert.equal(s.reasoning, '');
  // vLLM's echo: the reply carries the whole message, the request's beginning and what followed it.
  const echoed = { ...body, echo: true };
  assert.equal((await answerServer.client.chat.completions.create(echoed)).choices[0].message.content, ANSWER);
  assert.equal((await collectStream(answerServer.client, echoed)).content, ANSWER);
});

// The Responses API (client.responses) on the same scripted replies: reasoning
// and function calls as output items, streamed as typed events the SDK's
// accumulator checks (responses.stream throws on an event out of place).
test('responses.create: reasoning item, function_call item, usage; a follow-up with its output', async () => {
  const tools = [{ type: 'function', name: 'get_weather', description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
  const r = await toolServer.client.responses.create({ model: 'scripted', input: weatherQuestion[0].content, tools,
    temperature: 0 });
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.match(r.id, /^resp_/);
  assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'function_call']);
  assert.equal(r.output[0].content[0].text, REASONING);
  const call = r.output[1];
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), JSON.parse(CALL_JSON).arguments);
  assert.match(call.call_id, /^call_/);
  assert.equal(r.output_text, '');
  assert.equal(r.usage.output_tokens, (await tokenCount(toolServer, TOOL_SCRIPT)) + 1);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  // The client sends the output back with the call's result, as the Responses API's tool loop does.
  const next = await toolServer.client.responses.create({ model: 'scripted', tools, temperature: 0,
    input: [{ role: 'user', content: weatherQuestion[0].content }, ...r.output,
      { type: 'function_call_output', call_id: call.call_id, output: '{"temperature": 21}' }] });
  assert.ok(next.usage.input_tokens > r.usage.input_tokens + 10, 'the call and its result are in the prompt');
  assert.equal(next.output.at(-1).type, 'function_call');
});

test('responses.stream: the events add up to the answer (reasoning, then output_text)', async () => {
  const stream = answerServer.client.responses.stream({ model: 'scripted', input: sumQuestion, temperature: 0 });
  let deltas = 0, text = '';
  stream.on('response.output_text.delta', (e) => { ++deltas; text += e.delta; });
  const final = await stream.finalResponse();
  assert.equal(final.status, 'completed');
  assert.equal(final.output.find((o) => o.type === 'message').content[0].text, ANSWER);
  assert.equal(text, ANSWER);
  assert.equal(deltas, await tokenCount(answerServer, ANSWER), 'a delta per token');
  assert.equal(final.output[0].type, 'reasoning');
  assert.equal(final.output[0].content[0].text, ANSWER_REASONING);
  assert.equal(final.usage.output_tokens_details.reasoning_tokens, (await tokenCount(answerServer, ANSWER_REASONING)) + 2);
  const whole = await answerServer.client.responses.create({ model: 'scripted', input: sumQuestion, temperature: 0,
    max_output_tokens: 3 });
  assert.equal(whole.status, 'incomplete');
  assert.deepEqual(whole.output.map((o) => o.type), ['reasoning'], 'three tokens end inside the reasoning');
  assert.equal(whole.output_text, '');
  assert.equal(whole.incomplete_details.reason, 'max_output_tokens');
});

test('responses: include message.output_text.logprobs gives the answer\'s tokens, whole and streamed', async () => {
  const body = { model: 'scripted', input: sumQuestion, temperature: 0, include: ['message.output_text.logprobs'],
    top_logprobs: 2 };
  const whole = await answerServer.client.responses.create(body);
  const message = whole.output.find((o) => o.type === 'message');
  const { logprobs } = message.content[0];
  // The tokens of the message's text: not the reasoning's, nor the whitespace dropped after it, nor the end token.
  assert.equal(logprobs.map((l) => l.token).join(''), ANSWER);
  assert.equal(message.content[0].text, ANSWER);
  for (const l of logprobs) {
    assert.ok(l.logprob <= 0 && l.top_logprobs.length === 2, JSON.stringify(l));
    assert.deepEqual(l.bytes, [...Buffer.from(l.token)]);
  }
  const stream = answerServer.client.responses.stream(body);
  const streamed = [];
  let done = null;
  stream.on('response.output_text.delta', (e) => streamed.push(...e.logprobs));
  stream.on('response.output_text.done', (e) => { done = e.logprobs; });
  const final = await stream.finalResponse();
  assert.deepEqual(streamed, logprobs);
  assert.deepEqual(done, logprobs);
  assert.deepEqual(final.output.find((o) => o.type === 'message').content[0].logprobs, logprobs);
  const without = await answerServer.client.responses.create({ ...body, include: [] });
  assert.equal(without.output.find((o) => o.type === 'message').content[0].logprobs, undefined);

  // A review's findings: around a call each message has the tokens of its own text, whole and streamed alike.
  const around = { ...body, input: weatherQuestion, tools: [{ type: 'function', name: 'get_weather' }] };
  const aroundWhole = await aroundServer.client.responses.create(around);
  assert.deepEqual(aroundWhole.output.map((o) => o.type), ['message', 'function_call', 'message']);
  for (const m of aroundWhole.output.filter((o) => o.type === 'message'))
    assert.equal(m.content[0].logprobs.map((l) => l.token).join(''), m.content[0].text);
  // Ids differ (each response has its own); the SDK's stream helper adds its parsed fields.
  const shape = (o) => (o.type === 'message'
    ? { text: o.content[0].text, logprobs: o.content[0].logprobs, status: o.status }
    : { arguments: o.arguments, status: o.status });
  const aroundStream = await aroundServer.client.responses.stream(around).finalResponse();
  assert.deepEqual(aroundStream.output.map(shape), aroundWhole.output.map(shape));

  // A second review's: a bare call's tokens went to the message after it; the end token came with text a stop
  // string held back.
  const bare = { ...body, input: weatherQuestion, tools: [{ type: 'function', name: 'Glob',
    parameters: { type: 'object', properties: { pattern: { type: 'string' } } } }] };
  for (const extra of [{}, { stop: ['donex'] }]) {
    const r = await bareServer.client.responses.create({ ...bare, ...extra });
    assert.deepEqual(r.output.map((o) => o.type), ['message', 'function_call', 'message'], JSON.stringify(r.output));
    assert.equal(r.output[1].arguments, '{"pattern":"*.md"}');
    // The tokenizer writes ":<" as one token: its "<" opens the call, its logprob is the message's.
    for (const m of r.output.filter((o) => o.type === 'message'))
      assert.equal(m.content[0].logprobs.map((l) => l.token).join('').replace(/:<$/, ':'), m.content[0].text,
        JSON.stringify(extra));
    const streamed = await bareServer.client.responses.stream({ ...bare, ...extra }).finalResponse();
    assert.deepEqual(streamed.output.map(shape), r.output.map(shape));
  }
});

test('responses: truncation "auto" drops the earliest input items that do not fit; "disabled" is a 400', async () => {
  const turn = 'one two three four five six seven eight nine ten '.repeat(6);  // ~60 tokens
  const input = [];
  for (let i = 0; i < 30; ++i) input.push({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${turn}` });
  input.push(...sumQuestion);
  const body = { model: 'scripted', instructions: 'Be brief.', input, temperature: 0, max_output_tokens: 16 };
  await assert.rejects(answerServer.client.responses.create(body),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'input' && /maximum context length is 1024/.test(e.message));
  const r = await answerServer.client.responses.create({ ...body, truncation: 'auto' });
  assert.equal(r.truncation, 'auto');
  assert.ok(r.usage.input_tokens + 16 <= 1024, `${r.usage.input_tokens} input tokens leave the reply its room`);
  assert.ok(r.usage.input_tokens + 16 > 1024 - 2 * 70, 'only the items that had to go went');
  assert.equal(r.output.at(-1).type, 'message');
});

test('responses: a streamed function call; what a stateless server cannot do is a 400 naming it', async () => {
  const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object' } }];
  const events = [];
  for await (const e of await toolServer.client.responses.create({ model: 'scripted', input: weatherQuestion, tools,
    temperature: 0, stream: true })) events.push(e);
  const done = events.find((e) => e.type === 'response.function_call_arguments.done');
  assert.deepEqual(JSON.parse(done.arguments), JSON.parse(CALL_JSON).arguments);
  const deltas = events.filter((e) => e.type === 'response.function_call_arguments.delta');
  assert.ok(deltas.length > 1, `the arguments stream as they are written (${deltas.length} deltas)`);
  assert.equal(deltas.map((e) => e.delta).join(''), done.arguments);
  assert.equal(events.at(-1).type, 'response.completed');
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  for (const [body, param] of [[{ previous_response_id: 'resp_x' }, 'previous_response_id'],
    [{ tools: [{ type: 'web_search' }] }, 'tools[0]'], [{ input: [{ type: 'item_reference', id: 'x' }] }, 'input[0].type']])
    await assert.rejects(toolServer.client.responses.create({ model: 'scripted', input: 'Hi', ...body }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === param);
});

test('a Qwen3-Coder template: its XML call becomes tool_calls, the value typed by the schema; streamed alike', async () => {
  const body = { model: 'scripted', messages: weatherQuestion, tools: coderTools, temperature: 0 };
  const r = await coderServer.client.chat.completions.create(body);
  const [choice] = r.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, CODER_CONTENT);
  assert.equal(choice.message.tool_calls.length, 1);
  assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { days: 3 });
  const s = await collectStream(coderServer.client, body);
  assert.equal(s.finish, 'tool_calls');
  assert.equal(s.content, CODER_CONTENT);
  for (const piece of s.contentPieces) assert.doesNotMatch(piece, /<\/?tool_call>|<function=/);
  assert.deepEqual(s.calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]), [['get_weather', { days: 3 }]]);
  // The prompt is the Coder template's (its XML tool list), and without tools the call is text.
  const post = async (route, what) => (await fetch(coderServer.url + route, { method: 'POST',
    body: JSON.stringify(what) })).json();
  const { tokens } = await post('/tokenize', { messages: weatherQuestion, tools: coderTools });
  assert.match((await post('/detokenize', { tokens })).prompt, /<function>\n<name>get_weather<\/name>/);
  const plain = await coderServer.client.chat.completions.create({ ...body, tools: undefined });
  assert.equal(plain.choices[0].finish_reason, 'stop');
  assert.equal(plain.choices[0].message.content, CODER_SCRIPT);
});

test('a Qwen3-Coder call streams: the SDK sees a string value grow, then the whole call; Responses alike', async () => {
  const body = { model: 'scripted', messages: weatherQuestion, tools: saveTools, temperature: 0 };
  const whole = (await saveServer.client.chat.completions.create(body)).choices[0];
  assert.equal(whole.finish_reason, 'tool_calls');
  assert.equal(whole.message.content, 'Saving.');
  assert.deepEqual(JSON.parse(whole.message.tool_calls[0].function.arguments), { text: SAVED_TEXT });
  const deltas = [];
  let done = null;
  const stream = saveServer.client.chat.completions.stream(body);
  stream.on('tool_calls.function.arguments.delta', (e) => deltas.push(e));
  stream.on('tool_calls.function.arguments.done', (e) => { done = e; });
  const final = await stream.finalChatCompletion();
  assert.ok(deltas.length >= SAVED_TEXT.split(' ').length, `${deltas.length} argument deltas: the value as it comes`);
  for (const d of deltas) assert.equal(d.name, 'save');
  assert.equal(deltas.map((d) => d.arguments_delta).join(''), done.arguments);
  assert.equal(done.arguments, whole.message.tool_calls[0].function.arguments);
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
  assert.equal(final.choices[0].message.content, 'Saving.');
  // The Responses API: the function_call item's arguments arrive as deltas that join to the item's.
  const events = [];
  const rs = saveServer.client.responses.stream({ model: 'scripted', input: 'Save it.', tools: saveTools.map(
    (t) => ({ type: 'function', name: t.function.name, parameters: t.function.parameters })) });
  for await (const e of rs) events.push(e);
  const argDeltas = events.filter((e) => e.type === 'response.function_call_arguments.delta');
  const argDone = events.find((e) => e.type === 'response.function_call_arguments.done');
  assert.ok(argDeltas.length > 1, `${argDeltas.length} argument deltas`);
  assert.equal(argDeltas.map((e) => e.delta).join(''), argDone.arguments);
  assert.deepEqual(JSON.parse(argDone.arguments), { text: SAVED_TEXT });
});
