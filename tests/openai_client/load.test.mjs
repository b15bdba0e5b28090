// A bounded load test on loopback: bench/serve_bench.mjs against qinfer serve
// on the tiny checkpoint (a fixed request count, Poisson arrivals, a shared
// prefix), printing TTFT / TPOT / ITL percentiles and throughput. Every
// request must succeed, the shared prefix must come from the cache, and the
// server must be idle with every block free afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { root, startServe } from './serve_process.mjs';

test('bounded load with a shared prefix: all served, prefix cached, idle after', async () => {
  const { proc, url } = await startServe(['-m', path.join(root, 'tests/data/models/tiny'), '--port', '0', '-t', '2',
    '--ctx', '512', '--parallel', '8', '--block-size', '16']);
  try {
    const out = execFileSync('node', [path.join(root, 'bench/serve_bench.mjs'), '--url', url, '--requests', '48',
      '--concurrency', '8', '--rate', '40', '--input-len', '96', '--output-len', '16', '--shared-prefix', '64',
      '--json'], { timeout: 120000 }).toString();
    const s = JSON.parse(out);
    console.log(`load: ${s.request_throughput.toFixed(1)} req/s, ${s.output_throughput.toFixed(1)} tok/s; ` +
      `TTFT p50/p90/p99 ${s.ttft_ms.p50.toFixed(1)}/${s.ttft_ms.p90.toFixed(1)}/${s.ttft_ms.p99.toFixed(1)} ms; ` +
      `TPOT p50/p99 ${s.tpot_ms.p50.toFixed(2)}/${s.tpot_ms.p99.toFixed(2)} ms; ITL p99 ${s.itl_ms.p99.toFixed(2)} ms`);
    assert.equal(s.failed, 0);
    assert.ok(s.cached_tokens_mean >= 32, `the 64-token shared prefix comes from the cache (mean ${s.cached_tokens_mean} tokens)`);
    const metrics = await (await fetch(url + '/metrics')).text();
    assert.match(metrics, /qinfer:num_requests_running\{[^}]*\} 0\n/);
    assert.match(metrics, /qinfer:kv_cache_usage_perc\{[^}]*\} 0\n/);
    assert.match(metrics, /qinfer:generation_tokens_total\{[^}]*\} 768\n/);  // 48 x 16
  } finally {
    proc.kill('SIGTERM');
  }
});
