// /v1/rerank over HTTP as a client (fetch, as curl or a RAG framework sends
// it) reaches it through `qinfer serve`: each document's score is exactly
// what `qinfer rerank` prints for it, results most relevant first, top_n
// and return_documents honoured, bad requests a 400 naming the field. The
// official openai client has no rerank method, so this is plain HTTP.
//   QINFER=build/qinfer node --test tests/openai_client/rerank.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { qinfer, root, startServe } from './serve_process.mjs';

const tinyModel = path.join(root, 'tests/data/models/tiny');
const query = 'What is the capital of China?';
const documents = ['The capital of China is Beijing.', 'Gravity is a force.', '', 'Beijing'];
let server, url;

before(async () => {
  const serve = await startServe(['-m', tinyModel, '--port', '0', '-t', '2', '--parallel', '3']);
  server = serve.proc;
  url = serve.url;
});

after(() => {
  if (server && server.exitCode === null) server.kill('SIGKILL');
});

function rerankAlone(args) {
  const out = execFileSync(qinfer, ['rerank', '-m', tinyModel, '-t', '1', '-q', query, ...args],
    { stdio: ['ignore', 'pipe', 'ignore'] });
  return out.toString().trim().split('\n').map((line) => JSON.parse(line));
}

async function rerank(body, path = '/v1/rerank') {
  const res = await fetch(url + path, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

test('scores equal qinfer rerank, most relevant first', async () => {
  const alone = rerankAlone(documents);
  const want = alone.map((a, i) => ({ index: i, document: { text: documents[i] }, relevance_score: a.relevance_score }))
    .sort((a, b) => b.relevance_score - a.relevance_score);
  for (const path of ['/v1/rerank', '/rerank', '/v2/rerank']) {
    const r = await rerank({ model: tinyModel, query, documents }, path);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.results, want, path);
    assert.equal(r.body.usage.total_tokens, alone.reduce((sum, a) => sum + a.prompt_tokens, 0));
  }
  const top = await rerank({ query, documents, top_n: 1, return_documents: false });
  assert.deepEqual(top.body.results, [{ index: want[0].index, relevance_score: want[0].relevance_score }]);
  const task = await rerank({ query, documents: [documents[0]], instruction: 'Judge capitals' });
  assert.equal(task.body.results[0].relevance_score,
    rerankAlone(['--instruct', 'Judge capitals', documents[0]])[0].relevance_score);
});

test('bad requests are a 400 naming the field', async () => {
  for (const [body, param] of [[{ documents }, 'query'], [{ query, documents: [] }, 'documents'],
    [{ query, documents, top_n: -1 }, 'top_n']]) {
    const r = await rerank(body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.body.error.param, param);
  }
  assert.equal((await rerank({ model: 'another-model', query, documents })).status, 404);
});
