// Conformance of `cmax endpoint serve`'s /v1/messages with the official Anthropic TypeScript SDK.
// Usage: node anthropic_client.mjs BASE_URL MODEL      (BASE_URL without /v1: the SDK adds it)
// Runs messages.create (whole), messages.create with stream: true (the raw events, in order),
// messages.stream() (the SDK's MessageStream, which checks the event order itself and
// accumulates the message and its usage), an unknown model (must be a NotFoundError with
// not_found_error) and a body without max_tokens (a BadRequestError naming it). Prints one JSON
// summary on stdout: {"ok", "errors", "totals", "requests"}, totals summing the usage the SDK read
// with the prompt as Anthropic counts it: input_tokens + cache_read_input_tokens +
// cache_creation_input_tokens. Exit 0 when every check held, 1 when one failed, 2 on a crash.
// The package is resolved from node_modules next to this file (the test copies it there).
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, model] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error("usage: node anthropic_client.mjs BASE_URL MODEL");
  process.exit(2);
}
const client = new Anthropic({ baseURL, apiKey: "cmax-local", maxRetries: 0, timeout: 30_000 });
const errors = [];
const requests = [];
const check = (cond, what) => { if (!cond) errors.push(what); };

function record(how, usage) {
  check(usage && typeof usage.input_tokens === "number", `${how}: no usage.input_tokens`);
  if (!usage) return;
  const read = usage.cache_read_input_tokens, created = usage.cache_creation_input_tokens;
  check(typeof read === "number" && typeof created === "number", `${how}: no cache fields`);
  requests.push({ how, prompt_tokens: usage.input_tokens + (read ?? 0) + (created ?? 0), cached_tokens: read ?? 0,
                  cache_creation_tokens: created ?? 0, completion_tokens: usage.output_tokens });
}

const system = Array.from({ length: 40 }, (_, i) =>
  `Rule ${i}: answer about GPU clusters briefly and precisely.`).join(" ");
const body = (q, max_tokens) => ({
  model, max_tokens, system: [{ type: "text", text: system, cache_control: { type: "ephemeral" } }],
  messages: [{ role: "user", content: q }], metadata: { user_id: "conformance-1" } });

// Whole message.
const whole = await client.messages.create(body("How many GPUs per node?", 8));
check(whole.type === "message", "create: type");
check(whole.role === "assistant", "create: role");
check(whole.content?.[0]?.type === "text" && typeof whole.content[0].text === "string", "create: a text block");
check(whole.stop_reason === "max_tokens", `create: stop_reason ${whole.stop_reason}`);
check(whole.id?.startsWith("msg_"), "create: id");
record("create", whole.usage);

// Raw events, in Anthropic's order.
const raw = await client.messages.create({ ...body("And how many NICs?", 6), stream: true });
const order = [];
let text = "", deltaUsage = null, startUsage = null;
for await (const ev of raw) {
  order.push(ev.type);
  if (ev.type === "message_start") startUsage = ev.message.usage;
  if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") text += ev.delta.text;
  if (ev.type === "message_delta") deltaUsage = ev.usage;
}
const squeezed = order.filter((t, i) => t !== "content_block_delta" || order[i - 1] !== "content_block_delta");
// (The SDK drops ping events itself, as its Stream does for every server.)
check(JSON.stringify(squeezed) === JSON.stringify(["message_start", "content_block_start", "content_block_delta",
                                                   "content_block_stop", "message_delta", "message_stop"]),
      `stream: event order ${JSON.stringify(squeezed)}`);
check(order.filter((t) => t === "content_block_delta").length === 6, "stream: one delta per token");
check(text.length > 0, "stream: text");
check(deltaUsage?.output_tokens === 6, `stream: message_delta output_tokens ${deltaUsage?.output_tokens}`);
record("stream", { ...startUsage, output_tokens: deltaUsage?.output_tokens });

// The SDK's MessageStream: it throws on events out of order and builds the final message.
const ms = client.messages.stream(body("What is the interconnect?", 5));
let streamed = "";
ms.on("text", (t) => { streamed += t; });
const final = await ms.finalMessage();
check(final.content?.[0]?.text === streamed, "MessageStream: final text equals the streamed text");
check(final.stop_reason === "max_tokens", "MessageStream: stop_reason");
check(final.usage?.output_tokens === 5, `MessageStream: output_tokens ${final.usage?.output_tokens}`);
record("MessageStream", final.usage);

// Errors as Anthropic's types.
try {
  await client.messages.create({ ...body("x", 2), model: "no-such-model" });
  check(false, "unknown model: no error");
} catch (e) {
  check(e instanceof Anthropic.NotFoundError, `unknown model: ${e?.constructor?.name}`);
  check(e?.error?.error?.type === "not_found_error", `unknown model: type ${JSON.stringify(e?.error)}`);
}
try {
  const { max_tokens, ...rest } = body("x", 2);
  await client.messages.create(rest);
  check(false, "no max_tokens: no error");
} catch (e) {
  check(e instanceof Anthropic.BadRequestError, `no max_tokens: ${e?.constructor?.name}`);
  check(String(e?.error?.error?.message).includes("max_tokens"), `no max_tokens: ${JSON.stringify(e?.error)}`);
}

const totals = requests.reduce((t, r) => ({
  requests: t.requests + 1, prompt_tokens: t.prompt_tokens + r.prompt_tokens, cached_tokens: t.cached_tokens + r.cached_tokens,
  completion_tokens: t.completion_tokens + r.completion_tokens }),
  { requests: 0, prompt_tokens: 0, cached_tokens: 0, completion_tokens: 0 });
console.log(JSON.stringify({ ok: errors.length === 0, errors, totals, requests }));
process.exit(errors.length === 0 ? 0 : 1);
