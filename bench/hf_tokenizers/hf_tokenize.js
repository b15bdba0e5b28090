// Reference side of qinfer's tokenizer tests and benchmark: Hugging Face
// `tokenizers` (the official Node binding of the Rust library).
//
//   node hf_tokenize.js encode      TOKENIZER_JSON  < {"text": ...} lines   -> {"ids": [...]} lines
//   node hf_tokenize.js decode      TOKENIZER_JSON  < {"ids": [...]} lines  -> {"text": ..., "text_skip_special": ...} lines
//   node hf_tokenize.js pretokenize TOKENIZER_JSON  < {"text": ...} lines   -> {"piece_bytes": [...]} lines (piece lengths in bytes)
//   node hf_tokenize.js bench       TOKENIZER_JSON CORPUS_JSONL SECONDS     -> one JSON line with MB/s
//
// Single-threaded on purpose (the benchmark compares one thread with one thread).
'use strict';
process.env.RAYON_NUM_THREADS = '1';
process.env.TOKENIZERS_PARALLELISM = 'false';
const fs = require('fs');
const readline = require('readline');
const { Tokenizer } = require('tokenizers');

async function mapLines(fn) {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  const out = [];
  for await (const line of rl) {
    if (line.length === 0) continue;
    out.push(JSON.stringify(await fn(JSON.parse(line))));
    if (out.length >= 1024) { process.stdout.write(out.join('\n') + '\n'); out.length = 0; }
  }
  if (out.length) process.stdout.write(out.join('\n') + '\n');
}

// Long documents of the corpus: the records whose category starts with "long-".
function longDocuments(corpusPath) {
  return fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l.length)
    .map((l) => JSON.parse(l)).filter((r) => r.cat.startsWith('long-')).map((r) => r.text);
}

async function bench(tok, corpusPath, seconds) {
  const docs = longDocuments(corpusPath);
  const bytesPerPass = docs.reduce((n, d) => n + Buffer.byteLength(d, 'utf8'), 0);
  for (const d of docs) (await tok.encode(d, null, { addSpecialTokens: false })).getIds();  // warm the BPE cache
  let passes = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < seconds) {
    for (const d of docs) (await tok.encode(d, null, { addSpecialTokens: false })).getIds();
    passes++;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  }
  const bytes = bytesPerPass * passes;
  const reference = `npm tokenizers ${require('tokenizers/package.json').version}, Node ${process.version}`;
  return { reference, documents: docs.length, bytes, seconds: elapsed, mb_per_s: bytes / 1e6 / elapsed };
}

async function main() {
  const [mode, tokenizerPath, ...rest] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(tokenizerPath);
  if (mode === 'encode') {
    await mapLines(async (r) => ({ ids: (await tok.encode(r.text, null, { addSpecialTokens: false })).getIds() }));
  } else if (mode === 'decode') {
    await mapLines(async (r) => ({ text: await tok.decode(r.ids, false), text_skip_special: await tok.decode(r.ids, true) }));
  } else if (mode === 'pretokenize') {
    const pre = tok.getPreTokenizer();
    // Byte-level strings have one character per byte.
    await mapLines(async (r) => ({ piece_bytes: pre.preTokenizeString(r.text).map((p) => p[0].length) }));
  } else if (mode === 'bench') {
    console.log(JSON.stringify(await bench(tok, rest[0], Number(rest[1] || 3))));
  } else {
    throw new Error(`unknown mode '${mode}' (encode, decode, pretokenize, bench)`);
  }
}

main().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
