// structured_client.mjs — structured outputs through the official `openai` npm client:
// chat.completions.parse() with a plain JSON-schema response_format (no zod) returns a parsed
// object that satisfies the schema; json_object mode; extra vLLM fields (guided_choice,
// structured_outputs) passed through the client; and an unsupported schema keyword surfacing as
// an APIError 400 naming the field. Prints `ok NAME` / `not ok NAME: why` lines.
// Usage: node structured_client.mjs BASE_URL MODEL
import OpenAI from "openai";
import { check, clientFor, expect, finish } from "./check.mjs";

const [baseURL, model] = [process.argv[2], process.argv[3] || "stories"];
const client = clientFor(baseURL);

const schema = {
  type: "object",
  properties: { name: { type: "string", maxLength: 10 }, age: { type: "integer", minimum: 1, maximum: 99 },
                mood: { enum: ["happy", "sad"] } },
  required: ["name", "age", "mood"],
  additionalProperties: false,
};

await check("chat_completions_parse_json_schema", async () => {
  const done = [];
  for (let seed = 1; seed <= 5; seed++) {
    const r = await client.chat.completions.parse({
      model, messages: [{ role: "user", content: "Who is Lily?" }], max_tokens: 120, temperature: 1, seed,
      response_format: { type: "json_schema", json_schema: { name: "person", schema, strict: true } },
    });
    const p = r.choices[0].message.parsed;
    if (!p || typeof p.name !== "string" || p.name.length > 10 || !Number.isInteger(p.age) || p.age < 1 || p.age > 99 ||
        !["happy", "sad"].includes(p.mood) || Object.keys(p).length !== 3)
      return `seed ${seed}: ${JSON.stringify(r.choices[0].message)}`;
    done.push(p);
  }
  return expect(done.length === 5, JSON.stringify(done));
});

await check("chat_json_object_stream", async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Hi" }], max_tokens: 200, temperature: 0, stream: true,
    response_format: { type: "json_schema", json_schema: { name: "p", schema } },
  });
  let text = "", finish = null;
  for await (const c of stream) {
    text += c.choices[0]?.delta?.content || "";
    if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
  }
  const v = JSON.parse(text);
  return expect(finish === "stop" && typeof v.name === "string", `${finish} ${text}`);
});

await check("guided_choice_passthrough", async () => {
  const r = await client.completions.create({ model, prompt: "The cat", max_tokens: 10, temperature: 1, n: 4, seed: 3,
                                              guided_choice: ["red", "blue"] });
  return expect(r.choices.every((c) => ["red", "blue"].includes(c.text) && c.finish_reason === "stop"),
                JSON.stringify(r.choices));
});

await check("unsupported_keyword_is_400", async () => {
  try {
    await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }], max_tokens: 5,
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object", patternProperties: {} } } } });
    return "no error";
  } catch (e) {
    return expect(e instanceof OpenAI.APIError && e.status === 400 && /patternProperties/.test(e.message),
                  `${e.status} ${e.message}`);
  }
});

finish();
