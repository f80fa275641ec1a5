// Conformance of `cmax endpoint serve` with the official OpenAI Node client.
// Usage: node openai_client.mjs BASE_URL MODEL
// Runs models.list, chat.completions.create (plain and streaming with include_usage),
// completions.create (plain and streaming), and an unknown model (must be a NotFoundError);
// prints one JSON summary on stdout: {"ok", "errors", "totals", "requests"} where totals sums the
// usage the client read. Exit 0 when every check held, 1 when one failed, 2 on a crash.
// The openai package is resolved from node_modules next to this file (the test copies it there).
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error("usage: node openai_client.mjs BASE_URL MODEL");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: "cmax-local", maxRetries: 0, timeout: 30_000 });
const errors = [];
const requests = [];
const check = (cond, what) => { if (!cond) errors.push(what); };

function record(api, stream, usage) {
  check(usage && typeof usage.prompt_tokens === "number", `${api} stream=${stream}: no usage`);
  if (!usage) return;
  check(usage.total_tokens === usage.prompt_tokens + usage.completion_tokens, `${api}: total_tokens`);
  const cached = usage.prompt_tokens_details?.cached_tokens;
  check(typeof cached === "number", `${api} stream=${stream}: no prompt_tokens_details.cached_tokens`);
  requests.push({ api, stream, prompt_tokens: usage.prompt_tokens, cached_tokens: cached ?? 0,
                  completion_tokens: usage.completion_tokens });
}

const system = Array.from({ length: 40 }, (_, i) =>
  `Rule ${i}: answer about GPU clusters briefly and precisely.`).join(" ");
const messages = (q) => [{ role: "system", content: system }, { role: "user", content: q }];

// models.list (a page; iterate it as the client's docs do)
const ids = [];
for await (const m of client.models.list()) ids.push(m.id);
check(ids.includes(model), `models.list: ${model} not in ${JSON.stringify(ids)}`);

// chat, non-streaming
const chat = await client.chat.completions.create({ model, messages: messages("How many GPUs per node?"), max_tokens: 8 });
check(chat.object === "chat.completion", "chat: object");
check(chat.choices[0]?.message?.role === "assistant", "chat: role");
check(typeof chat.choices[0]?.message?.content === "string", "chat: content");
check(chat.choices[0]?.finish_reason === "length", "chat: finish_reason");
record("chat", false, chat.usage);

// chat, streaming with include_usage: the last chunk has empty choices and the usage
const stream = await client.chat.completions.create({
  model, messages: messages("And how many NICs?"), max_tokens: 6, stream: true,
  stream_options: { include_usage: true } });
let text = "", finish = null, usage = null, role = null, afterUsage = 0;
for await (const chunk of stream) {
  if (usage) afterUsage++;
  if (chunk.choices.length > 0) {
    const c = chunk.choices[0];
    role ??= c.delta?.role ?? null;
    text += c.delta?.content ?? "";
    if (c.finish_reason) finish = c.finish_reason;
  }
  if (chunk.usage) usage = chunk.usage;
}
check(role === "assistant", "chat stream: first delta role");
check(text.length > 0, "chat stream: no text");
check(finish === "length", `chat stream: finish_reason ${finish}`);
check(afterUsage === 0, "chat stream: chunks after the usage chunk");
check(usage?.completion_tokens === 6, "chat stream: completion_tokens");
check((usage?.prompt_tokens_details?.cached_tokens ?? 0) > 0, "chat stream: the shared prefix was not cached");
record("chat", true, usage);

// completions, non-streaming and streaming
const comp = await client.completions.create({ model, prompt: `${system} Once upon a time`, max_tokens: 5 });
check(comp.object === "text_completion", "completions: object");
check(typeof comp.choices[0]?.text === "string", "completions: text");
record("completions", false, comp.usage);
const cstream = await client.completions.create({
  model, prompt: `${system} Once upon a time`, max_tokens: 4, stream: true, stream_options: { include_usage: true } });
let ctext = "", cusage = null;
for await (const chunk of cstream) {
  if (chunk.choices.length > 0) ctext += chunk.choices[0].text ?? "";
  if (chunk.usage) cusage = chunk.usage;
}
check(ctext.length > 0, "completions stream: no text");
record("completions", true, cusage);

// an unknown model is the client's NotFoundError with OpenAI's code
try {
  await client.chat.completions.create({ model: "no-such-model", messages: messages("x") });
  check(false, "unknown model: no error");
} catch (e) {
  check(e instanceof OpenAI.NotFoundError, `unknown model: ${e?.constructor?.name}`);
  check(e?.code === "model_not_found", `unknown model: code ${e?.code}`);
}

const totals = requests.reduce((t, r) => ({
  requests: t.requests + 1, prompt_tokens: t.prompt_tokens + r.prompt_tokens,
  cached_tokens: t.cached_tokens + r.cached_tokens, completion_tokens: t.completion_tokens + r.completion_tokens }),
  { requests: 0, prompt_tokens: 0, cached_tokens: 0, completion_tokens: 0 });
console.log(JSON.stringify({ ok: errors.length === 0, errors, totals, requests }));
process.exit(errors.length === 0 ? 0 : 1);
