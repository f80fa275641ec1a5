// The same load as `cmax endpoint bench --api messages`, driven by the official Anthropic SDK
// (@anthropic-ai/sdk), for bench/endpoint_bench_messages.sh: client CPU per streamed token side by
// side, and the tokens it read.
// Usage: node anthropic_bench_client.mjs BASE_URL BODIES.jsonl CONCURRENCY
// BASE_URL without /v1 (the SDK adds it); BODIES.jsonl: one Messages request body per line, as
// `cmax endpoint bench --api messages --dry-run` prints them. Prints one JSON object:
// {"requests","ok","errors","prompt_tokens","cached_tokens","completion_tokens","content_chunks","wall_s"}.
import Anthropic from "@anthropic-ai/sdk";
import { readFileSync } from "node:fs";

const [baseURL, bodiesPath, concArg] = process.argv.slice(2);
if (!baseURL || !bodiesPath) {
  console.error("usage: node anthropic_bench_client.mjs BASE_URL BODIES.jsonl CONCURRENCY");
  process.exit(2);
}
const concurrency = Number(concArg || 1);
const bodies = readFileSync(bodiesPath, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
const client = new Anthropic({ baseURL, apiKey: process.env.ANTHROPIC_API_KEY || "cmax-local", maxRetries: 0,
                               timeout: 600_000 });
const totals = { requests: 0, ok: 0, errors: 0, prompt_tokens: 0, cached_tokens: 0, completion_tokens: 0,
                 content_chunks: 0 };

async function one(i) {
  totals.requests++;
  try {
    let start = null, output = 0, chunks = 0;
    const stream = await client.messages.create({ ...bodies[i], stream: true });
    for await (const ev of stream) {
      if (ev.type === "message_start") start = ev.message.usage;
      else if (ev.type === "content_block_delta" && ev.delta.type === "text_delta" && ev.delta.text) chunks++;
      else if (ev.type === "message_delta") output = ev.usage.output_tokens;
    }
    totals.ok++;
    totals.content_chunks += chunks;
    totals.completion_tokens += output;
    if (start) {
      const read = start.cache_read_input_tokens ?? 0;
      totals.prompt_tokens += start.input_tokens + read + (start.cache_creation_input_tokens ?? 0);
      totals.cached_tokens += read;
    }
  } catch (e) {
    totals.errors++;
  }
}

const t0 = performance.now();
let next = 0;
await Promise.all(Array.from({ length: Math.min(concurrency, bodies.length) }, async () => {
  while (next < bodies.length) await one(next++);
}));
console.log(JSON.stringify({ ...totals, wall_s: (performance.now() - t0) / 1000 }));
