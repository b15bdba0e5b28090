#!/usr/bin/env node
// A load test for an OpenAI-compatible server (qinfer serve, llama-server,
// vLLM), after vLLM's `bench serve`: a fixed number of streaming
// /v1/completions requests with token-id prompts of a fixed length (so every
// server sees the same tokens), ignore_eos and a fixed max_tokens, arriving
// as a Poisson process at --rate requests/s (inf: all at once) with at most
// --concurrency in flight. Reports request and output-token throughput, and
// TTFT, TPOT (time per output token after the first) and ITL (time between
// streamed chunks) p50/p90/p99. --shared-prefix N gives every prompt the same
// first N tokens (one long system prompt): TTFT is then reported apart for
// requests whose prefix came from the cache and those that computed it.
//   node bench/serve_bench.mjs --url http://127.0.0.1:8080 --requests 64 --concurrency 8 \
//        --input-len 128 --output-len 64 [--rate inf] [--shared-prefix 0] [--json]
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    model: { type: 'string' },
    requests: { type: 'string', default: '64' },
    concurrency: { type: 'string', default: '8' },
    rate: { type: 'string', default: 'inf' },
    'input-len': { type: 'string', default: '128' },
    'output-len': { type: 'string', default: '64' },
    'shared-prefix': { type: 'string', default: '0' },
    vocab: { type: 'string', default: '150000' },
    seed: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
  },
});
const n = Number(a.requests), concurrency = Number(a.concurrency), rate = Number(a.rate);
const inputLen = Number(a['input-len']), outputLen = Number(a['output-len']), shared = Number(a['shared-prefix']);
for (const [k, v] of Object.entries({ requests: n, concurrency, inputLen, outputLen }))
  if (!(Number.isInteger(v) && v > 0)) { console.error(`serve_bench: --${k} must be a positive integer`); process.exit(2); }
if (!(shared >= 0 && shared < inputLen)) { console.error('serve_bench: --shared-prefix must be in [0, input-len)'); process.exit(2); }

// A seeded generator: the same prompts in every run and for every server.
let state = BigInt(Number(a.seed)) * 6364136223846793005n + 1442695040888963407n;
function random() {
  state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
  return Number(state >> 11n) / 2 ** 53;
}
const tokens = (len) => Array.from({ length: len }, () => 1000 + Math.floor(random() * (Number(a.vocab) - 1000)));
const prefix = tokens(shared);
const prompts = Array.from({ length: n }, () => prefix.concat(tokens(inputLen - shared)));
const arrivals = [];
for (let i = 0, t = 0; i < n; ++i) {
  arrivals.push(t);
  if (Number.isFinite(rate)) t += -Math.log(1 - random()) / rate * 1000;
}

async function one(prompt) {
  const start = performance.now();
  const body = { prompt, max_tokens: outputLen, temperature: 0, ignore_eos: true, stream: true,
    stream_options: { include_usage: true } };
  if (a.model) body.model = a.model;
  const res = await fetch(a.url + '/v1/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const chunks = [];
  let buffer = '', cached = null, completion = null;
  const decoder = new TextDecoder();
  for await (const part of res.body) {
    buffer += decoder.decode(part, { stream: true });
    let at;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const j = JSON.parse(event.slice(6));
      if (j.usage) {
        completion = j.usage.completion_tokens;
        cached = j.usage.prompt_tokens_details?.cached_tokens ?? null;
      }
      if (j.choices?.[0]?.text) chunks.push(performance.now());
    }
  }
  const end = performance.now();
  const out = completion ?? outputLen;
  return { ttft: chunks[0] - start, e2e: end - start, out, cached,
    tpot: out > 1 ? (end - chunks[0]) / (out - 1) : 0, itl: chunks.slice(1).map((t, i) => t - chunks[i]) };
}

const results = [];
const failures = [];
const t0 = performance.now();
let next = 0, inFlight = 0;
await new Promise((resolve) => {
  const launch = () => {
    while (next < n && inFlight < concurrency && performance.now() - t0 >= arrivals[next]) {
      const prompt = prompts[next++];
      ++inFlight;
      one(prompt).then((r) => results.push(r), (e) => failures.push(String(e))).finally(() => {
        --inFlight;
        if (results.length + failures.length === n) resolve();
        else launch();
      });
    }
    if (next < n && inFlight < concurrency) setTimeout(launch, Math.max(0, arrivals[next] - (performance.now() - t0)));
  };
  launch();
});
const seconds = (performance.now() - t0) / 1000;

const pct = (xs, p) => {
  if (!xs.length) return null;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const stats = (xs) => ({ p50: pct(xs, 50), p90: pct(xs, 90), p99: pct(xs, 99), mean: xs.length ? xs.reduce((x, y) => x + y, 0) / xs.length : null });
const outTokens = results.reduce((s, r) => s + r.out, 0);
const summary = {
  requests: n, failed: failures.length, concurrency, rate: a.rate, input_len: inputLen, output_len: outputLen,
  shared_prefix: shared, seconds,
  request_throughput: results.length / seconds, output_throughput: outTokens / seconds,
  total_token_throughput: (outTokens + results.length * inputLen) / seconds,
  ttft_ms: stats(results.map((r) => r.ttft)), tpot_ms: stats(results.map((r) => r.tpot)),
  itl_ms: stats(results.flatMap((r) => r.itl)), e2e_ms: stats(results.map((r) => r.e2e)),
};
if (shared > 0) {
  summary.ttft_ms_cache_hit = stats(results.filter((r) => r.cached > 0).map((r) => r.ttft));
  summary.ttft_ms_cache_miss = stats(results.filter((r) => !(r.cached > 0)).map((r) => r.ttft));
  summary.cached_tokens_mean = results.reduce((s, r) => s + (r.cached ?? 0), 0) / Math.max(1, results.length);
}
if (failures.length) summary.first_failure = failures[0];
if (a.json) {
  console.log(JSON.stringify(summary));
} else {
  const f = (x) => (x === null ? '-' : x.toFixed(1));
  console.log(`${results.length}/${n} requests in ${seconds.toFixed(2)} s (concurrency ${concurrency}, rate ${a.rate}/s, ` +
    `${inputLen} in / ${outputLen} out${shared ? `, ${shared} shared` : ''})`);
  console.log(`throughput: ${summary.request_throughput.toFixed(2)} req/s, ${summary.output_throughput.toFixed(1)} output tok/s`);
  for (const k of ['ttft_ms', 'tpot_ms', 'itl_ms', 'e2e_ms', 'ttft_ms_cache_hit', 'ttft_ms_cache_miss']) {
    if (!summary[k]) continue;
    const s = summary[k];
    console.log(`${k.padEnd(18)} p50 ${f(s.p50)}  p90 ${f(s.p90)}  p99 ${f(s.p99)}  mean ${f(s.mean)}`);
  }
  if (failures.length) console.log(`failures: ${failures.length}, first: ${failures[0]}`);
}
process.exit(failures.length ? 1 : 0);
