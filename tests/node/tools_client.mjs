// tools_client.mjs — the official `openai` npm client against qserve serving a tiny checkpoint
// with the real Qwen3 chat template (tests/cli/test_server_tools.sh): tool calling fields,
// follow-up turns that replay tool calls (content null, arguments as a JSON string, role "tool"),
// content as a list of parts, refusals naming the field, the reasoning split streamed and not,
// and structured output / enforced tool choices applied to the answer after the reasoning (a
// random model rarely writes </think>: a logit_bias on its token makes it end the reasoning soon,
// as a client may ask). Prints `ok NAME` / `not ok NAME: why` per check.
// Usage: node tools_client.mjs BASE_URL MODE [FILE]
//   MODE "auto":  the server runs --enable-auto-tool-choice --tool-call-parser hermes
//                 --reasoning-parser qwen3; FILE receives the greedy answer of a plain question
//   MODE "plain": the server runs no tool flags and --reasoning-parser deepseek_r1; FILE holds
//                 the "auto" server's answer, which deepseek_r1 must return as reasoning
import fs from "node:fs";
import OpenAI from "openai";
import { check, clientFor, expect, finish } from "./check.mjs";

const [baseURL, mode, file] = process.argv.slice(2);
const client = clientFor(baseURL);
const model = "q";

const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
}];
// Tools whose arguments a random model completes in a few tokens under the constraint: enums and
// bounded integers (a free string could run past max_tokens).
const boundedTools = [
  { type: "function", function: { name: "get_forecast", description: "Forecast",
    parameters: { type: "object", additionalProperties: false, required: ["unit", "days"],
                  properties: { unit: { enum: ["celsius", "fahrenheit"] }, days: { type: "integer", minimum: 1, maximum: 7 } } } } },
  { type: "function", function: { name: "get_time", description: "The time now" } },
];
const validForecast = (a) => ["celsius", "fahrenheit"].includes(a.unit) && Number.isInteger(a.days) && a.days >= 1 &&
                             a.days <= 7 && Object.keys(a).length === 2;
const validCall = (name, args) => {
  const a = JSON.parse(args);
  return name === "get_forecast" ? validForecast(a) : name === "get_time" && typeof a === "object" && !Array.isArray(a);
};
const ask = [{ role: "user", content: "What is the weather in Paris?" }];

// A client's streamed chat, accumulated the way agents accumulate it.
async function streamChat(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  const out = { content: "", reasoning: "", calls: [], finish: null, role: null };
  for await (const c of stream) {
    const ch = c.choices[0];
    if (!ch) continue;
    const d = ch.delta || {};
    if (d.role) out.role = d.role;
    if (d.content) out.content += d.content;
    if (d.reasoning_content) out.reasoning += d.reasoning_content;
    for (const t of d.tool_calls || []) {
      if (!out.calls[t.index]) out.calls[t.index] = { id: t.id, name: t.function?.name, arguments: "" };
      out.calls[t.index].arguments += t.function?.arguments || "";
    }
    if (ch.finish_reason) out.finish = ch.finish_reason;
  }
  return out;
}

async function refusal(params, status, param) {
  try {
    await client.chat.completions.create(params);
    return "accepted";
  } catch (e) {
    return expect(e instanceof OpenAI.APIError && e.status === status && e.param === param,
                  `${e.constructor.name} ${e.status} param ${e.param}: ${e.message}`);
  }
}

async function tokenize(messages, extra = {}) {
  const r = await fetch(`${baseURL}/tokenize`, { method: "POST", headers: { "Content-Type": "application/json" },
                                                 body: JSON.stringify({ model, messages, ...extra }) });
  return (await r.json()).tokens;
}

const plainQuestion = { model, messages: [{ role: "user", content: "Say something." }], max_tokens: 12,
                        temperature: 1, seed: 11 };
// Qwen3's template closes an empty think block in the prompt: the reasoning has ended before the
// first token, so a constraint applies from it (vLLM's is_reasoning_end over the prompt).
const noThinking = { chat_template_kwargs: { enable_thinking: false } };

// The id of </think>, and a logit_bias that makes a random model sample it within a few tokens.
async function endThinkBias() {
  const r = await fetch(`${baseURL}/tokenize`, { method: "POST", headers: { "Content-Type": "application/json" },
                                                 body: JSON.stringify({ model, prompt: "</think>", add_special_tokens: false }) });
  const ids = (await r.json()).tokens;
  if (ids.length !== 1) throw new Error(`</think> is not one token: ${ids}`);
  return { id: ids[0], bias: { [ids[0]]: 5 } };
}
const answerSchema = { type: "object", additionalProperties: false, required: ["answer", "n"],
                       properties: { answer: { enum: ["yes", "no"] }, n: { type: "integer", minimum: 1, maximum: 9 } } };
const validAnswer = (text) => {
  try {
    const a = JSON.parse(text);
    return ["yes", "no"].includes(a.answer) && Number.isInteger(a.n) && a.n >= 1 && a.n <= 9 && Object.keys(a).length === 2;
  } catch {
    return false;
  }
};
const schemaFormat = { type: "json_schema", json_schema: { name: "answer", schema: answerSchema, strict: true } };

if (mode === "auto") {
  const params = { model, messages: ask, tools, max_tokens: 16, temperature: 1, seed: 5 };
  const one = await client.chat.completions.create(params);
  const m = one.choices[0].message;
  await check("tools_auto_create", async () =>
    expect(Array.isArray(m.tool_calls) && (typeof m.content === "string" || m.content === null) &&
           m.reasoning_content === null && ["stop", "length", "tool_calls"].includes(one.choices[0].finish_reason) &&
           (one.choices[0].finish_reason === "tool_calls") === (m.tool_calls.length > 0), JSON.stringify(one)));

  await check("tools_auto_stream_matches", async () => {
    const s = await streamChat(params);
    const calls = s.calls.map((c) => [c.name, c.arguments]);
    const want = m.tool_calls.map((c) => [c.function.name, c.function.arguments]);
    return expect(s.role === "assistant" && s.content === (m.content || "") && s.reasoning === "" &&
                  JSON.stringify(calls) === JSON.stringify(want) && s.finish === one.choices[0].finish_reason,
                  `${JSON.stringify(s)} vs ${JSON.stringify(one.choices[0])}`);
  });

  await check("tool_choice_none_keeps_text", async () => {
    const r = await client.chat.completions.create({ ...params, tool_choice: "none", parallel_tool_calls: false });
    return expect(r.choices[0].message.tool_calls.length === 0 && typeof r.choices[0].message.content === "string" &&
                  r.choices[0].finish_reason !== "tool_calls", JSON.stringify(r.choices[0]));
  });

  // The turn an agent sends after running the tool: the assistant's call replayed with content
  // null and arguments as a JSON string, then the tool's answer.
  const replay = [
    ...ask,
    { role: "assistant", content: null,
      tool_calls: [{ id: "chatcmpl-tool-abc", type: "function",
                     function: { name: "get_weather", arguments: "{\"city\": \"Paris\"}" } }] },
    { role: "tool", tool_call_id: "chatcmpl-tool-abc", content: "18 C and sunny" },
  ];
  await check("second_turn_with_tool_result", async () => {
    const r = await client.chat.completions.create({ model, messages: replay, tools, max_tokens: 8, temperature: 0 });
    const s = await streamChat({ model, messages: replay, tools, max_tokens: 8, temperature: 0 });
    return expect(r.choices[0].message.role === "assistant" && r.usage.prompt_tokens > one.usage.prompt_tokens &&
                  s.content === (r.choices[0].message.content || ""), `${JSON.stringify(r)} / ${JSON.stringify(s)}`);
  });

  await check("second_turn_renders_call_and_result", async () => {
    // what the template saw: the call as Qwen3 writes it (arguments an object) and the result
    const ids = await tokenize(replay);
    const r = await fetch(`${baseURL}/detokenize`, { method: "POST", headers: { "Content-Type": "application/json" },
                                                     body: JSON.stringify({ model, tokens: ids }) });
    const text = (await r.json()).prompt;
    return expect(text.includes("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>") &&
                  text.includes("<tool_response>\n18 C and sunny\n</tool_response>"), text);
  });

  await check("bad_replayed_arguments_refused", async () =>
    refusal({ model, messages: [ask[0], { ...replay[1], tool_calls: [{ id: "x", type: "function",
                                           function: { name: "get_weather", arguments: "{city" } }] }],
              max_tokens: 4 }, 400, "messages[1].tool_calls[0]"));

  await check("content_parts_joined_with_newline", async () => {
    const parts = await tokenize([{ role: "user", content: [{ type: "text", text: "first" }, { type: "text", text: "second" }] }]);
    const joined = await tokenize([{ role: "user", content: "first\nsecond" }]);
    const glued = await tokenize([{ role: "user", content: "firstsecond" }]);
    return expect(JSON.stringify(parts) === JSON.stringify(joined) && JSON.stringify(parts) !== JSON.stringify(glued),
                  `${parts} / ${joined}`);
  });

  await check("tokenize_renders_tools_and_kwargs_as_chat_does", async () => {
    const plain = await tokenize(ask);
    const withTools = await tokenize(ask, { tools });
    const noThinking = await tokenize(ask, { chat_template_kwargs: { enable_thinking: false } });
    const chat = await client.chat.completions.create({ model, messages: ask, tools, tool_choice: "none", max_tokens: 1 });
    const chatOff = await client.chat.completions.create({ model, messages: ask, max_tokens: 1,
                                                          chat_template_kwargs: { enable_thinking: false } });
    return expect(withTools.length > plain.length && withTools.length === chat.usage.prompt_tokens &&
                  noThinking.length > plain.length && noThinking.length === chatOff.usage.prompt_tokens,
                  `${plain.length} ${withTools.length} ${chat.usage.prompt_tokens} ${noThinking.length} ${chatOff.usage.prompt_tokens}`);
  });

  await check("image_part_refused", async () =>
    refusal({ model, max_tokens: 4, messages: [{ role: "user", content: [
      { type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: "http://x/cat.png" } }] }] },
    400, "messages[0].content[1]"));

  // Enforced choices: the constraint engine makes the output a call that fits the schema.
  const named = { model, messages: ask, tools: boundedTools, max_tokens: 64, temperature: 1, ...noThinking,
                  tool_choice: { type: "function", function: { name: "get_forecast" } } };
  await check("tool_choice_named_enforced", async () => {
    const bad = [];
    for (const seed of [1, 2, 3, 4]) {
      const r = await client.chat.completions.create({ ...named, seed });
      const c = r.choices[0];
      const call = c.message.tool_calls[0];
      if (c.message.tool_calls.length !== 1 || call.function.name !== "get_forecast" ||
          !validForecast(JSON.parse(call.function.arguments)) || c.finish_reason !== "stop" ||
          !call.id.startsWith("chatcmpl-tool-") || call.type !== "function") bad.push(JSON.stringify(c));
    }
    return expect(bad.length === 0, bad.join(" | "));
  });
  await check("tool_choice_named_stream_matches", async () => {
    const r = await client.chat.completions.create({ ...named, seed: 9 });
    const s = await streamChat({ ...named, seed: 9 });
    const want = r.choices[0].message.tool_calls[0].function;
    return expect(s.calls.length === 1 && s.calls[0].name === want.name && s.calls[0].arguments === want.arguments &&
                  s.calls[0].id.startsWith("chatcmpl-tool-") && s.finish === "stop", `${JSON.stringify(s)} vs ${JSON.stringify(want)}`);
  });
  const required = { model, messages: ask, tools: boundedTools, max_tokens: 96, temperature: 1, tool_choice: "required",
                     parallel_tool_calls: false, ...noThinking };
  let firstCall = null;
  await check("tool_choice_required_enforced", async () => {
    const bad = [];
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const r = await client.chat.completions.create({ ...required, seed });
      const c = r.choices[0];
      const call = c.message.tool_calls[0];
      if (c.message.tool_calls.length !== 1 || !validCall(call.function.name, call.function.arguments) ||
          c.finish_reason !== "tool_calls") bad.push(JSON.stringify(c));
      else firstCall = firstCall || call;
    }
    return expect(bad.length === 0, bad.join(" | "));
  });
  await check("tool_choice_required_stream_matches", async () => {
    const r = await client.chat.completions.create({ ...required, seed: 4 });
    const s = await streamChat({ ...required, seed: 4 });
    const want = r.choices[0].message.tool_calls.map((c) => [c.function.name, c.function.arguments]);
    return expect(JSON.stringify(s.calls.map((c) => [c.name, c.arguments])) === JSON.stringify(want) &&
                  s.finish === "tool_calls", `${JSON.stringify(s)} vs ${JSON.stringify(want)}`);
  });
  await check("required_call_round_trip", async () => {
    // the agent loop: run the call the server returned, send its result back, get an answer
    const messages = [...ask, { role: "assistant", content: null, tool_calls: [firstCall] },
                      { role: "tool", tool_call_id: firstCall.id, content: "{\"temp\": 18}" }];
    const r = await client.chat.completions.create({ model, messages, tools: boundedTools, max_tokens: 8, temperature: 0 });
    return expect(r.choices[0].message.role === "assistant" && r.usage.prompt_tokens > 0, JSON.stringify(r));
  });
  // A random model writes no markup by itself; a regex constraint (structured_outputs) makes it
  // write Qwen3's markup, which the hermes and qwen3 parsers must then take apart, as they would
  // a real Qwen3's output. Thinking is off so that the regex applies from the first token (the
  // parsers read the text, whatever wrote it).
  const markup = (re) => ({ model, messages: ask, tools: boundedTools, max_tokens: 120, temperature: 1,
                            structured_outputs: { regex: re }, ...noThinking });
  const callRe = String.raw`<tool_call>\n\{"name": "get_forecast", "arguments": \{"unit": "(celsius|fahrenheit)", "days": [1-7]\}\}\n</tool_call>`;
  await check("auto_parses_hermes_markup", async () => {
    const p = markup(String.raw`Let me look\.\n\n` + callRe);
    const r = await client.chat.completions.create({ ...p, seed: 2 });
    const c = r.choices[0];
    const call = c.message.tool_calls[0];
    const s = await streamChat({ ...p, seed: 2 });
    return expect(c.message.content === "Let me look.\n\n" && c.message.tool_calls.length === 1 &&
                  call.function.name === "get_forecast" && validForecast(JSON.parse(call.function.arguments)) &&
                  c.finish_reason === "tool_calls" && c.message.reasoning_content === null &&
                  s.content === c.message.content && s.calls.length === 1 && s.calls[0].name === "get_forecast" &&
                  s.calls[0].arguments === call.function.arguments && s.finish === "tool_calls",
                  `${JSON.stringify(c)} / ${JSON.stringify(s)}`);
  });
  await check("auto_parses_two_calls_and_parallel_false", async () => {
    const p = markup(callRe + String.raw`\n<tool_call>\n\{"name": "get_time", "arguments": \{\}\}\n</tool_call>`);
    const r = await client.chat.completions.create({ ...p, seed: 3, max_tokens: 240 });
    const one = await client.chat.completions.create({ ...p, seed: 3, max_tokens: 240, parallel_tool_calls: false });
    const names = r.choices[0].message.tool_calls.map((c) => c.function.name);
    return expect(JSON.stringify(names) === '["get_forecast","get_time"]' && r.choices[0].message.content === null &&
                  one.choices[0].message.tool_calls.length === 1, `${JSON.stringify(r.choices[0])} / ${JSON.stringify(one.choices[0])}`);
  });
  await check("qwen3_reasoning_split", async () => {
    const p = { ...markup(String.raw`<think>\nThe user wants (rain|sun)\.\n</think>\n\nIt is (warm|cold)\.`), tools: undefined };
    const r = await client.chat.completions.create({ ...p, seed: 4 });
    const m = r.choices[0].message;
    const s = await streamChat({ ...p, seed: 4 });
    return expect(/^\nThe user wants (rain|sun)\.\n$/.test(m.reasoning_content) && /^\n\nIt is (warm|cold)\.$/.test(m.content) &&
                  s.reasoning === m.reasoning_content && s.content === m.content, `${JSON.stringify(m)} / ${JSON.stringify(s)}`);
  });
  await check("qwen3_reasoning_then_tool_call", async () => {
    const p = markup(String.raw`<think>\nI need the forecast\.\n</think>\n\n` + callRe);
    const r = await client.chat.completions.create({ ...p, seed: 5 });
    const m = r.choices[0].message;
    const s = await streamChat({ ...p, seed: 5 });
    return expect(m.reasoning_content === "\nI need the forecast.\n" && m.content === "\n\n" && m.tool_calls.length === 1 &&
                  r.choices[0].finish_reason === "tool_calls" && s.reasoning === m.reasoning_content &&
                  s.calls.length === 1 && s.calls[0].arguments === m.tool_calls[0].function.arguments,
                  `${JSON.stringify(m)} / ${JSON.stringify(s)}`);
  });

  // Thinking on: the constraint waits for </think>, then makes the answer fit the schema.
  const { id: endId, bias } = await endThinkBias();
  const afterThinking = { model, messages: ask, max_tokens: 120, temperature: 1, logit_bias: bias,
                          response_format: schemaFormat };
  await check("structured_output_after_reasoning", async () => {
    const bad = [];
    let reasoned = 0;
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = await client.chat.completions.create({ ...afterThinking, seed, logprobs: true });
      const c = r.choices[0];
      const toks = c.logprobs.content.map((t) => t.token);
      const end = toks.indexOf("</think>");
      // </think> is sampled at all: the schema would refuse it, so it was dormant until then;
      // after it the answer is the schema's, and reasoning_content is what came before the tag
      const reasoning = c.message.reasoning_content;
      if (end < 0 || !validAnswer(c.message.content) || c.finish_reason !== "stop" ||
          typeof reasoning !== "string" || (end > 0) !== (reasoning.length > 0) || reasoning.includes("</think>"))
        bad.push(JSON.stringify(c.message) + " " + JSON.stringify(toks));
      if (end > 0) reasoned++;
    }
    return expect(bad.length === 0 && reasoned > 0, `${reasoned} reasoned; ${bad.join(" | ")}`);
  });
  await check("structured_output_thinking_off_from_first_token", async () => {
    const r = await client.chat.completions.create({ ...afterThinking, ...noThinking, logit_bias: undefined, seed: 3 });
    const m = r.choices[0].message;
    return expect(validAnswer(m.content) && m.reasoning_content === null && r.choices[0].finish_reason === "stop",
                  JSON.stringify(r.choices[0]));
  });
  await check("tool_choice_named_after_reasoning", async () => {
    const bad = [];
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({ ...named, ...{ chat_template_kwargs: undefined }, logit_bias: bias, seed });
      const c = r.choices[0];
      const call = c.message.tool_calls[0];
      if (c.message.tool_calls.length !== 1 || call.function.name !== "get_forecast" ||
          !validForecast(JSON.parse(call.function.arguments)) || c.finish_reason !== "stop") bad.push(JSON.stringify(c));
    }
    return expect(bad.length === 0 && endId > 0, bad.join(" | "));
  });

  await check("tool_choice_with_response_format_refused", async () =>
    refusal({ ...required, response_format: { type: "json_object" } }, 400, "tool_choice"));
  await check("tool_choice_unknown_function_refused", async () =>
    refusal({ ...params, tool_choice: { type: "function", function: { name: "nope" } } }, 400, "tool_choice"));

  await check("enable_thinking_false", async () => {
    const on = await client.chat.completions.create({ ...plainQuestion });
    const off = await client.chat.completions.create({ ...plainQuestion, chat_template_kwargs: { enable_thinking: false } });
    // Qwen3's template closes an empty think block in the prompt itself: 4 more tokens or so
    return expect(off.usage.prompt_tokens > on.usage.prompt_tokens && off.choices[0].message.reasoning_content === null,
                  `${on.usage.prompt_tokens} vs ${off.usage.prompt_tokens}: ${JSON.stringify(off.choices[0])}`);
  });

  const plain = await client.chat.completions.create(plainQuestion);
  fs.writeFileSync(file, JSON.stringify(plain.choices[0].message.content));
} else {
  await check("tools_need_auto_tool_choice_flag", async () => {
    try {
      await client.chat.completions.create({ model, messages: ask, tools, max_tokens: 4 });
      return "accepted";
    } catch (e) {
      return expect(e.status === 400 && e.param === "tool_choice" && /--enable-auto-tool-choice/.test(e.message),
                    `${e.status} ${e.param} ${e.message}`);
    }
  });
  const { bias } = await endThinkBias();
  await check("enforced_choice_needs_no_flag", async () => {
    // the call is the answer after the reasoning: deepseek_r1 splits the text before </think> off
    const r = await client.chat.completions.create({ model, messages: ask, tools: boundedTools, max_tokens: 120, seed: 1,
                                                     logit_bias: bias,
                                                     tool_choice: { type: "function", function: { name: "get_forecast" } } });
    const m = r.choices[0].message;
    const call = m.tool_calls[0];
    return expect(call && validForecast(JSON.parse(call.function.arguments)) && m.content === "" &&
                  !/get_forecast|</.test(m.reasoning_content || ""), JSON.stringify(r.choices[0]));
  });
  await check("deepseek_r1_structured_after_reasoning_stream", async () => {
    const p = { model, messages: ask, max_tokens: 120, temperature: 1, logit_bias: bias, response_format: schemaFormat };
    const bad = [];
    for (const seed of [2, 6]) {
      const r = await client.chat.completions.create({ ...p, seed });
      const m = r.choices[0].message;
      const s = await streamChat({ ...p, seed });
      if (!validAnswer(m.content) || s.content !== m.content || s.reasoning !== (m.reasoning_content || "") ||
          r.choices[0].finish_reason !== "stop" || s.finish !== "stop")
        bad.push(`${JSON.stringify(m)} / ${JSON.stringify(s)}`);
    }
    return expect(bad.length === 0, bad.join(" | "));
  });
  await check("tools_with_choice_none_served", async () => {
    const r = await client.chat.completions.create({ model, messages: ask, tools, tool_choice: "none", max_tokens: 4 });
    return expect(r.choices[0].message.tool_calls.length === 0, JSON.stringify(r));
  });

  const answer = JSON.parse(fs.readFileSync(file, "utf8"));
  await check("deepseek_r1_unclosed_think_is_reasoning", async () => {
    const r = await client.chat.completions.create(plainQuestion);
    const m = r.choices[0].message;
    return expect(answer.length > 0 && m.reasoning_content === answer && m.content === null,
                  `${JSON.stringify(m)} vs ${JSON.stringify(answer)}`);
  });
  await check("deepseek_r1_stream", async () => {
    const s = await streamChat(plainQuestion);
    return expect(s.reasoning === answer && s.content === "", JSON.stringify(s));
  });
}

finish();
