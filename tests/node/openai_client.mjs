// openai_client.mjs — the official `openai` npm client against a running qserve: completions,
// chat, streaming (both), n > 1, logprobs, stop, seed, errors surfaced as APIError. Prints one
// `ok NAME` / `not ok NAME: why` line per check. Usage: node openai_client.mjs BASE_URL MODEL
import OpenAI from "openai";
import { check, clientFor, expect, finish } from "./check.mjs";

const [baseURL, model] = [process.argv[2], process.argv[3] || "stories"];
const client = clientFor(baseURL, process.env.QSERVE_TEST_KEY || "none");
const prompt = "Once upon a time";

const greedy = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0 });
const greedyText = greedy.choices[0].text;

await check("completions_create", async () =>
  expect(greedy.object === "text_completion" && greedyText.length > 0 && greedy.usage.completion_tokens === 24 &&
         greedy.choices[0].finish_reason === "length", JSON.stringify(greedy)));

await check("models_list", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  return expect(ids.length === 1 && ids[0] === model, JSON.stringify(ids));
});

await check("completions_stream", async () => {
  const stream = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0, stream: true,
                                                   stream_options: { include_usage: true } });
  let text = "", usage = null, chunks = 0;
  for await (const c of stream) {
    chunks++;
    for (const ch of c.choices) text += ch.text;
    if (c.usage) usage = c.usage;
  }
  return expect(text === greedyText && usage && usage.completion_tokens === 24 && chunks > 2,
                `${JSON.stringify(text)} vs ${JSON.stringify(greedyText)}, usage ${JSON.stringify(usage)}`);
});

const chat = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Lily went to" }],
                                                   max_tokens: 16, temperature: 0 });
await check("chat_create", async () =>
  expect(chat.object === "chat.completion" && chat.choices[0].message.role === "assistant" &&
         chat.choices[0].message.content.length > 0 && chat.usage.completion_tokens === 16, JSON.stringify(chat)));

await check("chat_stream", async () => {
  const stream = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Lily went to" }],
                                                        max_tokens: 16, temperature: 0, stream: true });
  let text = "", role = null, finish = null;
  for await (const c of stream) {
    const d = c.choices[0]?.delta;
    if (d?.role) role = d.role;
    if (d?.content) text += d.content;
    if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
  }
  return expect(text === chat.choices[0].message.content && role === "assistant" && finish === "length",
                `${JSON.stringify(text)} role ${role} finish ${finish}`);
});

await check("n_greater_than_1", async () => {
  const r = await client.completions.create({ model, prompt, max_tokens: 10, temperature: 1.0, n: 4, seed: 3 });
  const idx = r.choices.map((c) => c.index).sort();
  return expect(r.choices.length === 4 && JSON.stringify(idx) === "[0,1,2,3]" && r.usage.completion_tokens === 40,
                JSON.stringify(r.choices));
});

await check("chat_n_greater_than_1_stream", async () => {
  const stream = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Tom" }],
                                                        max_tokens: 8, temperature: 0, n: 2, stream: true });
  const texts = ["", ""];
  for await (const c of stream) for (const ch of c.choices) texts[ch.index] += ch.delta?.content || "";
  return expect(texts[0].length > 0 && texts[0] === texts[1], JSON.stringify(texts));
});

await check("logprobs", async () => {
  const r = await client.completions.create({ model, prompt, max_tokens: 5, temperature: 0, logprobs: 3 });
  const lp = r.choices[0].logprobs;
  const c = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Tom" }], max_tokens: 5,
                                                   temperature: 0, logprobs: true, top_logprobs: 2 });
  const content = c.choices[0].logprobs.content;
  return expect(lp.tokens.length === 5 && lp.token_logprobs.every((x) => x <= 0) && lp.top_logprobs.length === 5 &&
                content.length === 5 && content.every((t) => t.top_logprobs.length === 2 && t.logprob <= 0),
                JSON.stringify({ lp, content }));
});

await check("stop", async () => {
  const word = greedyText.trim().split(/\s+/)[3];
  const r = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0, stop: [word] });
  return expect(r.choices[0].finish_reason === "stop" && !r.choices[0].text.includes(word) &&
                greedyText.startsWith(r.choices[0].text + word), `stop ${word}: ${JSON.stringify(r.choices[0])}`);
});

await check("seed_reproducible", async () => {
  const a = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 1.0, seed: 1234 });
  const b = await client.completions.create({ model, prompt, max_tokens: 16, temperature: 1.0, seed: 1234 });
  return expect(a.choices[0].text === b.choices[0].text, `${a.choices[0].text} vs ${b.choices[0].text}`);
});

await check("errors_are_api_errors", async () => {
  try {
    await client.completions.create({ model, prompt, max_tokens: 5, temperature: 9 });
    return "no error for temperature 9";
  } catch (e) {
    if (!(e instanceof OpenAI.BadRequestError)) return `not a BadRequestError: ${e}`;
    if (e.param !== "temperature") return `param ${e.param}`;
  }
  try {
    await client.completions.create({ model: "nope", prompt, max_tokens: 5 });
    return "no error for an unknown model";
  } catch (e) {
    return expect(e instanceof OpenAI.NotFoundError && e.code === "model_not_found", `${e.constructor.name} ${e.code}`);
  }
});

finish();
