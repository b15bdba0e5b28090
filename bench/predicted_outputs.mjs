// Chat answers with and without a prediction (OpenAI's predicted outputs) on
// a running `qinfer serve`: decode tok/s of a 256-token greedy answer alone,
// with its own text as the prediction, and with every 8th word of it edited;
// two rounds, each checking the answer did not change.
//   node bench/predicted_outputs.mjs http://127.0.0.1:8080 MODEL_NAME
const [url, model] = process.argv.slice(2);
async function post(body) {
  const start = performance.now();
  const r = await fetch(url + '/v1/chat/completions', { method: 'POST', body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(JSON.stringify(j));
  return { j, s: (performance.now() - start) / 1000 };
}
const base = { model, messages: [{ role: 'user', content: 'Rewrite the file.' }], max_tokens: 256, temperature: 0,
  ignore_eos: true };
const text = (await post(base)).j.choices[0].message.content;
const edited = text.split(' ').map((w, i) => (i % 8 === 7 ? w + 'x' : w)).join(' ');
const rate = (x) => (x.j.usage.completion_tokens / x.s).toFixed(1);
const drafts = (x) => {
  const d = x.j.usage.completion_tokens_details;
  return `${d.accepted_prediction_tokens} confirmed, ${d.rejected_prediction_tokens} rejected`;
};
for (let round = 1; round <= 2; ++round) {
  const plain = await post(base);
  const right = await post({ ...base, prediction: { type: 'content', content: text } });
  const edit = await post({ ...base, prediction: { type: 'content', content: edited } });
  const same = [plain, right, edit].every((x) => x.j.choices[0].message.content === text);
  console.log(`round ${round}: no prediction ${rate(plain)} tok/s; its text ${rate(right)} (${drafts(right)}); ` +
    `every 8th word edited ${rate(edit)} (${drafts(edit)}); answers unchanged: ${same}`);
}
