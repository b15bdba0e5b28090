// response_format through the official openai npm client: json_schema answers
// parse and follow their schema (sampled, n > 1, streamed alike), json_object
// answers are JSON objects, and a schema the server cannot follow is a
// BadRequestError naming response_format.
//   QINFER=build/qinfer node --test tests/openai_client/structured_output.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import OpenAI from 'openai';
import { root, startServe } from './serve_process.mjs';

const modelDir = path.join(root, 'tests/data/models/tiny');
let server, client;

before(async () => {
  let url;
  ({ proc: server, url } = await startServe(['-m', modelDir, '--port', '0', '-t', '2', '--ctx', '512',
    '--parallel', '4']));
  client = new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0 });
});

after(() => { if (server.exitCode === null) server.kill('SIGKILL'); });

const messages = [{ role: 'user', content: 'Describe a city as JSON.' }];
// Every value bounded, so that even the random-weight test model ends the document.
const schema = {
  type: 'object',
  properties: {
    city: { enum: ['Paris', 'Lyon', 'Nice'] },
    sunny: { type: 'boolean' },
    tags: { type: 'array', items: { enum: ['old', 'new'] }, minItems: 1, maxItems: 3 },
    note: { type: ['null', 'boolean'] },
  },
  required: ['city', 'sunny', 'tags'],
  additionalProperties: false,
};
const responseFormat = { type: 'json_schema', json_schema: { name: 'city', schema, strict: true } };

function checkCity(doc) {
  assert.deepEqual(Object.keys(doc).slice(0, 3), ['city', 'sunny', 'tags']);  // the schema's order
  assert.ok(['Paris', 'Lyon', 'Nice'].includes(doc.city), JSON.stringify(doc));
  assert.equal(typeof doc.sunny, 'boolean');
  assert.ok(doc.tags.length >= 1 && doc.tags.length <= 3 && doc.tags.every((t) => t === 'old' || t === 'new'));
  for (const key of Object.keys(doc)) assert.ok(['city', 'sunny', 'tags', 'note'].includes(key), key);
}

test('json_schema: sampled answers, n = 2, each parses and follows the schema', async () => {
  const seen = new Set();
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model: modelDir, messages, response_format: responseFormat,
      temperature: 1, seed, n: 2, max_tokens: 100 });
    assert.equal(r.choices.length, 2);
    for (const choice of r.choices) {
      assert.equal(choice.finish_reason, 'stop', choice.message.content);
      const doc = JSON.parse(choice.message.content);
      checkCity(doc);
      seen.add(JSON.stringify(doc));
    }
  }
  assert.ok(seen.size > 1, 'sampling draws different documents');
});

test('json_schema streamed: the deltas add up to the answer sent whole', async () => {
  const request = { model: modelDir, messages, response_format: responseFormat, temperature: 0.8, seed: 9,
    max_tokens: 100 };
  const whole = await client.chat.completions.create(request);
  const stream = await client.chat.completions.create({ ...request, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, 'stop');
  checkCity(JSON.parse(text));
});

test('json_object: the answer is a JSON object or, cut by max_tokens, the start of one', async () => {
  for (const seed of [4, 5]) {
    const r = await client.chat.completions.create({ model: modelDir, messages,
      response_format: { type: 'json_object' }, temperature: 1, seed, max_tokens: 40 });
    const { content } = r.choices[0].message;
    if (r.choices[0].finish_reason === 'stop') {
      const doc = JSON.parse(content);
      assert.equal(typeof doc, 'object');
      assert.ok(!Array.isArray(doc) && doc !== null);
    } else {
      assert.equal(r.choices[0].finish_reason, 'length');
      assert.match(content, /^\s*\{/);
    }
  }
});

test('a schema keyword the server cannot follow is a 400 naming response_format', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: modelDir, messages, response_format: { type: 'json_schema',
      json_schema: { name: 'x', schema: { type: 'object', properties: { age: { type: 'integer', multipleOf: 5 } } } } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format' &&
      /\/properties\/age\/multipleOf/.test(e.message));
});

// What Pydantic writes for Field(ge=, le=, gt=), constr(pattern=), date and UUID fields.
test('bounds, patterns and formats are followed (checked with JavaScript\'s own RegExp and Date)', async () => {
  const pydantic = {
    type: 'object',
    properties: {
      code: { type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' },
      age: { type: 'integer', minimum: 1, maximum: 120 },
      score: { type: 'number', exclusiveMinimum: 0, maximum: 5 },
      born: { type: 'string', format: 'date' },
      id: { type: 'string', format: 'uuid' },
    },
    required: ['code', 'age', 'score', 'born', 'id'],
  };
  const r = await client.chat.completions.create({ model: modelDir, messages, max_tokens: 200, seed: 5, n: 3,
    temperature: 1, response_format: { type: 'json_schema', json_schema: { name: 'p', schema: pydantic } } });
  let stopped = 0;
  for (const c of r.choices) {
    if (c.finish_reason !== 'stop') continue;
    ++stopped;
    const doc = JSON.parse(c.message.content);
    assert.match(doc.code, new RegExp(pydantic.properties.code.pattern));
    assert.ok(Number.isInteger(doc.age) && doc.age >= 1 && doc.age <= 120, c.message.content);
    assert.ok(doc.score > 0 && doc.score <= 5, c.message.content);
    assert.equal(new Date(doc.born + 'T00:00:00Z').toISOString().slice(0, 10), doc.born);
    assert.match(doc.id, /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/i);
  }
  assert.ok(stopped > 0, JSON.stringify(r.choices.map((c) => c.finish_reason)));
});

const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
    parameters: { type: 'object', properties: { city: { enum: ['Paris', 'Rome'] }, celsius: { type: 'boolean' } },
      required: ['city', 'celsius'] } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object',
    properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] } } },
];

function checkCall(call) {
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'get_weather') {
    assert.ok(['Paris', 'Rome'].includes(args.city) && typeof args.celsius === 'boolean', call.function.arguments);
  } else {
    assert.equal(call.function.name, 'get_time');
    assert.ok(['UTC', 'CET'].includes(args.zone), call.function.arguments);
  }
}

test('tool_choice required: the reply is tool calls of the tools offered, arguments of their schemas', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model: modelDir, messages, tools, tool_choice: 'required',
      parallel_tool_calls: false, temperature: 1, seed, max_tokens: 120 });
    const { message, finish_reason } = r.choices[0];
    assert.equal(finish_reason, 'tool_calls', JSON.stringify(message));
    assert.equal(message.tool_calls.length, 1);
    checkCall(message.tool_calls[0]);
  }
});

test('tool_choice naming a function: the reply calls that one', async () => {
  const r = await client.chat.completions.create({ model: modelDir, messages, tools, temperature: 1, seed: 4,
    tool_choice: { type: 'function', function: { name: 'get_time' } }, max_tokens: 120 });
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.equal(r.choices[0].message.tool_calls.length, 1);
  assert.equal(r.choices[0].message.tool_calls[0].function.name, 'get_time');
  checkCall(r.choices[0].message.tool_calls[0]);
  await assert.rejects(client.chat.completions.create({ model: modelDir, messages, tools,
    tool_choice: { type: 'function', function: { name: 'get_news' } } }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice' && /get_news/.test(e.message));
});

// vLLM's structured outputs, sent as its clients send them (extra body fields).
const noThinking = { enable_thinking: false };

test('structured_outputs choice (and guided_choice): each answer is exactly one of the choices', async () => {
  const choices = ['positive', 'negative', 'neutral'];
  for (const field of [{ structured_outputs: { choice: choices } }, { guided_choice: choices }]) {
    const r = await client.chat.completions.create({ model: modelDir, messages, n: 3, temperature: 1, seed: 2,
      chat_template_kwargs: noThinking, ...field });
    for (const c of r.choices) {
      assert.equal(c.finish_reason, 'stop');
      assert.ok(choices.includes(c.message.content), c.message.content);
    }
  }
});

test('structured_outputs regex: completions are whole matches (checked with RegExp)', async () => {
  const regex = '[A-Z][a-z]{2,5}-\\d{2}';
  const r = await client.completions.create({ model: modelDir, prompt: 'A code:', n: 3, temperature: 1, seed: 3,
    max_tokens: 30, structured_outputs: { regex } });
  for (const c of r.choices) {
    assert.equal(c.finish_reason, 'stop');
    assert.match(c.text, new RegExp(`^(?:${regex})$`));
  }
});

test('structured_outputs grammar (GBNF) streamed: the deltas add up to a match', async () => {
  const grammar = 'root ::= "SELECT " column " FROM " table\ncolumn ::= "id" | "name"\ntable ::= [a-z]{1,8}';
  const stream = await client.chat.completions.create({ model: modelDir, messages, stream: true, temperature: 1,
    seed: 4, max_tokens: 40, chat_template_kwargs: noThinking, structured_outputs: { grammar } });
  let text = '';
  let finish;
  for await (const chunk of stream) {
    if (!chunk.choices.length) continue;
    text += chunk.choices[0].delta.content ?? '';
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  assert.equal(finish, 'stop');
  assert.match(text, /^SELECT (id|name) FROM [a-z]{1,8}$/);
});

test('a grammar the server cannot read is a 400 naming the field, the rule and where it is', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: modelDir, messages,
      structured_outputs: { grammar: 'root ::= "a" rest' } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'structured_outputs.grammar' &&
      /'rest' is used but never defined \(line 1, column 14\)/.test(e.message));
});
