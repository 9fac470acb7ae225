// vllm_fields.mjs — vLLM's extra request fields through the official `openai` npm client (which
// passes unknown body fields through, as vLLM's docs tell its users to do): echo with logprobs and
// max_tokens 0, prompt_logprobs, best_of, stop_reason, continuous_usage_stats, chat
// continue_final_message with echo, and a refused field surfacing as an APIError naming it.
// Prints `ok NAME` / `not ok NAME: why`. Usage: node vllm_fields.mjs BASE_URL MODEL
import OpenAI from "openai";
import { check, clientFor, expect, finish } from "./check.mjs";

const [baseURL, model] = [process.argv[2], process.argv[3] || "stories"];
const client = clientFor(baseURL);

await check("node_echo_scores_prompt", async () => {
  const r = await client.completions.create({ model, prompt: "Lily went to", max_tokens: 0, echo: true, logprobs: 1 });
  const lp = r.choices[0].logprobs;
  return expect(r.choices[0].text === "Lily went to" && r.usage.completion_tokens === 0 &&
                lp.token_logprobs[0] === null && lp.token_logprobs.length === r.usage.prompt_tokens &&
                lp.token_logprobs.slice(1).every((x) => x <= 0), JSON.stringify(r));
});

await check("node_prompt_logprobs", async () => {
  const r = await client.completions.create({ model, prompt: "Lily went to", max_tokens: 1, prompt_logprobs: 1 });
  const p = r.choices[0].prompt_logprobs;
  return expect(Array.isArray(p) && p.length === r.usage.prompt_tokens && p[0] === null &&
                Object.values(p[1]).every((v) => v.rank >= 1), JSON.stringify(r));
});

await check("node_best_of", async () => {
  const r = await client.completions.create({ model, prompt: "Once upon", max_tokens: 6, n: 2, best_of: 4, seed: 3,
                                              temperature: 1.2 });
  return expect(r.choices.length === 2 && r.choices.map((c) => c.index).join() === "0,1", JSON.stringify(r));
});

await check("node_stop_reason", async () => {
  const r = await client.completions.create({ model, prompt: "Lily went to", max_tokens: 8, temperature: 0,
                                              stop: ["park"] });
  return expect(r.choices[0].finish_reason === "stop" && r.choices[0].stop_reason === "park", JSON.stringify(r));
});

await check("node_continuous_usage_stats", async () => {
  const stream = await client.completions.create({ model, prompt: "Once", max_tokens: 3, ignore_eos: true, stream: true,
                                                   stream_options: { include_usage: true, continuous_usage_stats: true } });
  const seen = [];
  for await (const c of stream) if (c.choices.length) seen.push(c.usage && c.usage.completion_tokens);
  return expect(seen.join() === "1,2,3", JSON.stringify(seen));
});

await check("node_chat_continue_final_message", async () => {
  const r = await client.chat.completions.create({
    model, max_tokens: 3, temperature: 0, echo: true, continue_final_message: true, add_generation_prompt: false,
    messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Once upon" }] });
  const c = r.choices[0];
  return expect(c.message.content.startsWith("Once upon") && "stop_reason" in c && Array.isArray(r.prompt_logprobs),
                JSON.stringify(r));
});

await check("node_refused_field_is_api_error", async () => {
  try {
    await client.completions.create({ model, prompt: "a", max_tokens: 1, suffix: "b" });
    return "suffix was accepted";
  } catch (e) {
    return expect(e instanceof OpenAI.APIError && e.status === 400 && e.param === "suffix", String(e));
  }
});

finish();
