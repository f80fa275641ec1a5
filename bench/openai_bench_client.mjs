// The same load as `cmax endpoint bench`, driven by the official `openai` npm client, for
// bench/endpoint_bench_vs_openai.sh: the agreement of tokens and cached tokens, and client CPU
// per streamed token side by side.
// Usage: node openai_bench_client.mjs BASE_URL BODIES.jsonl CONCURRENCY
// BODIES.jsonl: one request body per line, as `cmax endpoint bench --dry-run` prints them.
// Prints one JSON object: {"requests","ok","errors","prompt_tokens","cached_tokens",
// "completion_tokens","content_chunks","wall_s"}. The openai package is resolved from
// node_modules next to this file (the script copies it there).
import OpenAI from "openai";
import { readFileSync } from "node:fs";

const [baseURL, bodiesPath, concArg] = process.argv.slice(2);
if (!baseURL || !bodiesPath) {
  console.error("usage: node openai_bench_client.mjs BASE_URL BODIES.jsonl CONCURRENCY");
  process.exit(2);
}
const concurrency = Number(concArg || 1);
const bodies = readFileSync(bodiesPath, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
const client = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY || "cmax-local", maxRetries: 0,
                            timeout: 600_000 });
const totals = { requests: 0, ok: 0, errors: 0, prompt_tokens: 0, cached_tokens: 0, completion_tokens: 0,
                 content_chunks: 0 };
const per = [];

async function one(i) {
  const body = bodies[i];
  totals.requests++;
  try {
    let usage = null, chunks = 0;
    if (body.prompt !== undefined) {
      const stream = await client.completions.create(body);
      for await (const c of stream) {
        if (c.choices?.length && c.choices[0].text) chunks++;
        if (c.usage) usage = c.usage;
      }
    } else {
      const stream = await client.chat.completions.create(body);
      for await (const c of stream) {
        if (c.choices?.length && c.choices[0].delta?.content) chunks++;
        if (c.usage) usage = c.usage;
      }
    }
    totals.ok++;
    totals.content_chunks += chunks;
    if (usage) {
      totals.prompt_tokens += usage.prompt_tokens;
      totals.completion_tokens += usage.completion_tokens;
      totals.cached_tokens += usage.prompt_tokens_details?.cached_tokens ?? 0;
    }
    per.push({ i, prompt_tokens: usage?.prompt_tokens, cached_tokens: usage?.prompt_tokens_details?.cached_tokens,
               completion_tokens: usage?.completion_tokens });
  } catch (e) {
    totals.errors++;
  }
}

const t0 = process.hrtime.bigint();
let next = 0;
async function worker() {
  while (next < bodies.length) await one(next++);
}
await Promise.all(Array.from({ length: Math.min(concurrency, bodies.length) }, worker));
totals.wall_s = Number(process.hrtime.bigint() - t0) / 1e9;
per.sort((a, b) => a.i - b.i);
totals.per_request = per;
console.log(JSON.stringify(totals));
