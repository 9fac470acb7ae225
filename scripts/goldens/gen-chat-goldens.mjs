// gen-chat-goldens.mjs — writes tests/data/chat/*.json, the differential goldens of qserve's chat
// template interpreter. Every conversation below is rendered through every template (the real
// Qwen3 and Llama-3.1 templates from ../shared/data, and the extra templates in
// tests/data/chat/templates/) by two independent implementations:
//   * @huggingface/jinja (the JS port used by transformers.js), always;
//   * Python jinja2 set up exactly as transformers' apply_chat_template does it
//     (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, HF's tojson,
//     raise_exception, strftime_now), whenever python3 with jinja2 is installed.
// Python is what HF runs, so its output is the expected value; where the JS port disagrees the
// case is listed under "js_differs" in the file and reported here.
// Usage (from anywhere): node scripts/goldens/gen-chat-goldens.mjs
import { Template } from "@huggingface/jinja";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const shared = process.env.QSERVE_SHARED_DATA || path.resolve(repo, "../shared/data");
const outDir = path.join(repo, "tests/data/chat");

// ---- random templates ----
// Besides the templates above, random.json holds small random templates (each case carries its
// own "template"): whitespace control and tag nesting, expressions over every operator, filter,
// test and method, and nested for/if/set/macro/namespace/break/continue. Python renders them too,
// so they pin down the corners of Jinja's semantics. A fixed seed keeps the file stable.
function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(20261202);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const mod = (s) => s.replaceAll("{m}", () => pick(["", "", "-", "+"])).replaceAll("{n}", () => pick(["", "", "-", "+"]));
function wsTemplate(depth = 0) {
  const ws = ["\n", "  ", "\t", " ", "\n\n", "  \n", "x", "ab", "\r\n"];
  const leaf = ["{{{m} 'v' {n}}}", "{#{m} c {n}#}", "{%{m} set a = 1 {n}%}", "{%{m} if true {n}%}y{%{m} else {n}%}z{%{m} endif {n}%}"];
  let out = "";
  for (let k = 1 + Math.floor(rand() * 6); k > 0; k--) {
    const r = rand();
    if (r < 0.45) out += pick(ws);
    else if (r < 0.75) out += mod(pick(leaf));
    else if (depth < 3) {
      const loop = rand() < 0.5;
      out += mod(loop ? "{%{m} for i in [1, 2] {n}%}" : pick(["{%{m} if true {n}%}", "{%{m} if false {n}%}"]));
      out += wsTemplate(depth + 1) + mod(loop ? "{%{m} endfor {n}%}" : "{%{m} endif {n}%}");
    }
  }
  return out.replaceAll("{{+", "{{").replaceAll("+}}", "}}");
}
function exprTemplate() {
  const atoms = ["0", "1", "-2", "7", "3.5", "0.1", "2.0", "1e3", "'a'", "'Hello World'", "''", "' x '", "none", "true",
    "false", "[1, 2, 3]", "[]", "['b', 'a']", "{'k': 1}", "{}", "(1, 'x')", "messages", "messages[0]",
    "messages[0].content", "undefined_var", "'ü€😀'", "[1.5, none, 'q']"];
  const binops = ["+", "-", "*", "/", "//", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"];
  const filters = ["length", "trim", "tojson", "string", "lower", "upper", "first", "last", "join", "default('d')", "list",
    "reverse | list", "unique | list", "sort", "int", "float", "abs", "round", "capitalize", "title", "items | list",
    "count", "sum", "max", "min", "join(',')", "tojson(indent=1)", "selectattr('x') | list", "map('string') | list",
    "replace('a', 'b')", "e", "indent(2)", "select('odd') | list", "reject | list", "dictsort", "round(1, 'ceil')"];
  const tests = ["defined", "none", "string", "number", "mapping", "iterable", "sequence", "integer", "float", "true",
    "false", "odd", "even", "divisibleby(2)", "eq(1)", "lower", "upper", "boolean", "callable", "in([1, 'a'])"];
  const methods = ["upper()", "lower()", "strip()", "split()", "split('l')", "startswith('H')", "endswith('d')",
    "title()", "replace('l', 'L')", "get('k')", "find('o')", "count('l')", "lstrip('H')", "rstrip()",
    "format(1)", "splitlines()", "capitalize()"];
  const expr = (d) => {
    const r = rand();
    if (d > 3 || r < 0.3) return pick(atoms);
    if (r < 0.5) return `(${expr(d + 1)} ${pick(binops)} ${expr(d + 1)})`;
    if (r < 0.65) return `${expr(d + 1)} | ${pick(filters)}`;
    if (r < 0.75) return `(${expr(d + 1)} is ${pick(["", "not "])}${pick(tests)})`;
    if (r < 0.85) return `(${expr(d + 1)}).${pick(methods)}`;
    if (r < 0.9) return `${pick(["messages", "'Hello World'", "[1, 2, 3]"])}[${pick(["0", "-1", "1:", "::-1", ":2", "::2"])}]`;
    if (r < 0.95) return `(${expr(d + 1)} if ${expr(d + 1)} else ${expr(d + 1)})`;
    return `(not ${expr(d + 1)})`;
  };
  return `{{ ${expr(0)} }}`;
}
function stmtTemplate() {
  const names = ["a", "b", "x"];
  const val = (inLoop) => pick(["1", "'s'", "a", "b", "x", "ns.v", "x ~ 1", "(a or 0) + 1", "m(a)", "m(q=b, p=1)", "[a, b]",
    ...(inLoop ? ["loop.index", "loop.first", "loop.previtem", "loop.length", "loop.cycle('o', 'e')"] : [])]);
  const stmts = (d, inLoop) => {
    let out = "";
    for (let k = 1 + Math.floor(rand() * 4); k > 0; k--) {
      const r = rand();
      if (r < 0.25) out += `{% set ${pick(names)} = ${val(inLoop)} %}`;
      else if (r < 0.4) out += `{{ ${val(inLoop)} }},`;
      else if (r < 0.5) out += `{% set ns.v = ${val(inLoop)} %}`;
      else if (r < 0.65 && d < 3)
        out += `{% for ${pick(["i", "a", "x"])} in ${pick(["[1, 2, 3]", "[]", "'ab'", "range(2)", "[[1, 2]]"])}${pick(["", "", " if loop is undefined"])} %}${stmts(d + 1, true)}{% else %}E{% endfor %}`;
      else if (r < 0.78 && d < 3)
        out += `{% if ${val(inLoop)} %}${stmts(d + 1, inLoop)}{% elif ${val(inLoop)} %}${stmts(d + 1, inLoop)}{% else %}${stmts(d + 1, inLoop)}{% endif %}`;
      else if (r < 0.85 && inLoop) out += pick(["{% break %}", "{% continue %}"]);
      else if (r < 0.92 && d < 2) out += `{% set ${pick(names)} %}${stmts(d + 1, inLoop)}{% endset %}`;
      else out += "[{{ a }}|{{ b }}|{{ x }}]";
    }
    return out;
  };
  return "{% macro m(p, q=2) %}<{{ p }}{{ q }}{{ a }}>{% endmacro %}{% set ns = namespace(v=0) %}" + stmts(0, false) + "|{{ ns.v }}";
}

// ---- tools and conversations ----
const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather in a city — \"now\", not a forecast.",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", description: "City name, e.g. Paris" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        days: { type: "integer", minimum: 1, maximum: 7 },
        tags: { type: "array", items: { type: "string" } },
        note: { type: ["string", "null"] },
      },
      required: ["city"],
    },
  },
};
const timeTool = {
  type: "function",
  function: {
    name: "get_time",
    description: "Current local time of a timezone.",
    parameters: { type: "object", properties: { tz: { type: "string" } }, required: ["tz"] },
  },
};
const tools = [weatherTool, timeTool];
const call = (name, args, id) => ({ id: id || `call_${name}`, type: "function", function: { name, arguments: args } });

const conversations = {
  user_only: { messages: [{ role: "user", content: "Hello!" }] },
  system_user: {
    messages: [
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "What is 2 + 2?" },
    ],
  },
  multi_turn: {
    messages: [
      { role: "system", content: "Answer briefly." },
      { role: "user", content: "What is 2 + 2?" },
      { role: "assistant", content: "4." },
      { role: "user", content: "And 3 + 3?" },
    ],
  },
  no_system_multi: {
    messages: [
      { role: "user", content: "Hi there" },
      { role: "assistant", content: "Hello! How can I help?" },
      { role: "user", content: "Tell me a joke." },
      { role: "assistant", content: "Why did the GPU cross the road? To get to the other tensor." },
    ],
  },
  unicode: {
    messages: [
      { role: "user", content: "Grüße aus Köln — 你好 👋 \"quoted\" \\ back\\slash" },
      { role: "assistant", content: "¡Hola! ☀️\ttab\nnew line" },
      { role: "user", content: "Ελληνικά, русский, עברית, emoji 🧪" },
    ],
  },
  empty_content: {
    messages: [
      { role: "user", content: "" },
      { role: "assistant", content: "" },
      { role: "user", content: "ok" },
    ],
  },
  padded: {
    messages: [
      { role: "system", content: "  padded system  \n" },
      { role: "user", content: "\n  hi  \n" },
    ],
  },
  only_system: { messages: [{ role: "system", content: "System only." }] },
  think_inline: {
    messages: [
      { role: "user", content: "2+2?" },
      { role: "assistant", content: "<think>\nAdd them.\n</think>\n\nIt is 4." },
      { role: "user", content: "3+3?" },
    ],
  },
  think_last: {
    messages: [
      { role: "user", content: "2+2?" },
      { role: "assistant", content: "<think>\nAdd them.\n</think>\n\nIt is 4." },
    ],
  },
  reasoning_field: {
    messages: [
      { role: "user", content: "2+2?" },
      { role: "assistant", content: "4", reasoning_content: "2 plus 2 is 4" },
      { role: "user", content: "thanks" },
      { role: "assistant", content: "You're welcome!", reasoning_content: "\nbe polite\n" },
    ],
  },
  tool_call_dict: {
    tools,
    messages: [
      { role: "system", content: "You can call tools." },
      { role: "user", content: "What's the weather in Paris?" },
      { role: "assistant", content: "", tool_calls: [call("get_weather", { city: "Paris", unit: "celsius" })] },
      { role: "tool", tool_call_id: "call_get_weather", content: "{\"temperature\": 22.5, \"unit\": \"celsius\"}" },
      { role: "assistant", content: "It is 22.5 °C in Paris." },
    ],
  },
  tool_call_string_args: {
    tools,
    messages: [
      { role: "user", content: "Weather in Oslo?" },
      { role: "assistant", content: "", tool_calls: [call("get_weather", "{\"city\": \"Oslo\"}")] },
      { role: "tool", content: "cloudy, 4 degrees" },
    ],
  },
  multi_tool_calls: {
    tools,
    messages: [
      { role: "user", content: "Weather and time in Tokyo?" },
      {
        role: "assistant",
        content: "Let me check both.",
        tool_calls: [call("get_weather", { city: "Tokyo", days: 1 }, "c1"), call("get_time", { tz: "Asia/Tokyo" }, "c2")],
      },
      { role: "tool", tool_call_id: "c1", content: "sunny" },
      { role: "tool", tool_call_id: "c2", content: "09:30" },
      { role: "assistant", content: "Sunny, and it is 09:30." },
    ],
  },
  tools_no_system: { tools, messages: [{ role: "user", content: "  What can you do?  " }] },
  tool_args_types: {
    tools,
    messages: [
      { role: "user", content: "Run it." },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          call("get_weather", {
            n: 3, x: -0.5, big: 12345678901, tiny: 1.5e-7, flag: true, nothing: null,
            list: [1, "two", { three: 3 }], nested: { a: { b: [] }, e: {} }, text: "line\nbreak \"q\" ü",
          }),
        ],
      },
    ],
  },
  multi_step_tool: {
    tools,
    messages: [
      { role: "user", content: "Weather in Rome?" },
      { role: "assistant", content: "<think>\nNeed the tool.\n</think>\n\n", tool_calls: [call("get_weather", { city: "Rome" })] },
      { role: "user", content: "<tool_response>\n{\"temperature\": 30}\n</tool_response>" },
      { role: "assistant", content: "<think>\nIt is hot.\n</think>\n\nIt is 30 degrees in Rome." },
    ],
  },
  null_content_tool_call: {
    tools,
    messages: [
      { role: "user", content: "Time in Lima?" },
      { role: "assistant", content: null, tool_calls: [call("get_time", { tz: "America/Lima" })] },
    ],
  },
};

// ---- templates ----
function readConfig(rel) {
  const cfg = JSON.parse(fs.readFileSync(path.join(shared, rel), "utf8"));
  const tok = (v) => (v && typeof v === "object" ? v.content : v ?? null);
  return { source: cfg.chat_template, bos: tok(cfg.bos_token), eos: tok(cfg.eos_token) };
}
function readTemplate(name, bos, eos) {
  const rel = `tests/data/chat/templates/${name}.jinja`;
  return { source: fs.readFileSync(path.join(repo, rel), "utf8"), bos, eos, origin: { file: rel } };
}

const templates = {
  qwen3: { ...readConfig("tokenizers/qwen3/tokenizer_config.json"), origin: { shared: "tokenizers/qwen3/tokenizer_config.json" } },
  llama3_1: { ...readConfig("tokenizers/llama3_1/tokenizer_config.json"), origin: { shared: "tokenizers/llama3_1/tokenizer_config.json" } },
  llama3_1_tools: readTemplate("llama3_1_tools", "<|begin_of_text|>", "<|eot_id|>"),
  qwen2_5: readTemplate("qwen2_5", null, "<|im_end|>"),
  mistral: readTemplate("mistral", "<s>", "</s>"),
  chatml: readTemplate("chatml", null, "<|im_end|>"),
  gemma: readTemplate("gemma", "<bos>", "<eos>"),
  deepseek_r1: readTemplate("deepseek_r1", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
  hermes_tools: readTemplate("hermes_tools", null, "<|im_end|>"),
  features: readTemplate("features", "<s>", "</s>"),
};

// Extra (conversation, kwargs) pairs per template on top of every conversation x add_generation_prompt.
const extras = {
  qwen3: [
    ["user_only", { enable_thinking: false }],
    ["multi_turn", { enable_thinking: false }],
    ["user_only", { enable_thinking: true }],
    ["tool_call_dict", { enable_thinking: false }],
  ],
  llama3_1_tools: [
    ["tool_call_dict", { date_string: "02 Dec 2026", tools_in_user_message: false }],
    ["system_user", { builtin_tools: ["code_interpreter", "brave_search"] }],
    ["builtin_call", { builtin_tools: ["code_interpreter", "brave_search"] }],
  ],
  features: [["user_only", { fail: "yes" }]],
};
conversations.builtin_call = {
  messages: [
    { role: "user", content: "Search the weather." },
    { role: "assistant", tool_calls: [call("brave_search", { query: "weather in Paris", count: "3" })] },
    { role: "ipython", content: "{\"results\": []}" },
  ],
};

function casesFor(name) {
  const cases = [];
  for (const [conv, c] of Object.entries(conversations)) {
    if (conv === "builtin_call") continue;
    for (const agp of [false, true]) cases.push({ name: `${conv}${agp ? "+gen" : ""}`, conv, add_generation_prompt: agp });
  }
  for (const [conv, kwargs] of extras[name] || []) {
    const tag = Object.entries(kwargs).map(([k, v]) => `${k}=${Array.isArray(v) ? v.length : v}`).join(",");
    cases.push({ name: `${conv}+gen[${tag}]`, conv, add_generation_prompt: true, kwargs });
  }
  return cases.map((c) => {
    const conv = conversations[c.conv];
    const out = { name: c.name, messages: conv.messages, add_generation_prompt: c.add_generation_prompt };
    if (conv.tools) out.tools = conv.tools;
    if (c.kwargs) out.kwargs = c.kwargs;
    return out;
  });
}

function renderJs(t, c) {
  try {
    const tmpl = new Template(t.source);
    const vars = { messages: c.messages, tools: c.tools ?? null, documents: null, add_generation_prompt: c.add_generation_prompt };
    if (t.bos !== null) vars.bos_token = t.bos;
    if (t.eos !== null) vars.eos_token = t.eos;
    return { ok: true, out: tmpl.render({ ...vars, ...(c.kwargs || {}) }) };
  } catch (e) {
    return { ok: false, err: String(e && e.message ? e.message : e) };
  }
}

// transformers' environment, in Python; reads [{source, bos, eos, cases}] and answers per case.
const PY = String.raw`
import json, sys
from datetime import datetime
import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

class Raised(Exception):
    pass

def raise_exception(message):
    raise Raised(message)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

def strftime_now(fmt):
    return datetime.now().strftime(fmt)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now
jobs, random_cases = json.load(sys.stdin)
answers = []
random_answers = []
for c in random_cases:
    try:
        random_answers.append({"ok": True, "out": env.from_string(c["template"]).render(
            messages=c["messages"], tools=None, documents=None, add_generation_prompt=False)})
    except Raised as e:
        random_answers.append({"ok": False, "err": str(e), "kind": "raise_exception"})
    except Exception as e:
        random_answers.append({"ok": False, "err": type(e).__name__ + ": " + str(e), "kind": "error"})
for job in jobs:
    tmpl = env.from_string(job["source"])
    special = {}
    if job["bos"] is not None: special["bos_token"] = job["bos"]
    if job["eos"] is not None: special["eos_token"] = job["eos"]
    res = []
    for c in job["cases"]:
        kw = dict(special); kw.update(c.get("kwargs") or {})
        try:
            res.append({"ok": True, "out": tmpl.render(messages=c["messages"], tools=c.get("tools"), documents=None,
                                                       add_generation_prompt=c["add_generation_prompt"], **kw)})
        except Raised as e:
            res.append({"ok": False, "err": str(e), "kind": "raise_exception"})
        except Exception as e:
            res.append({"ok": False, "err": type(e).__name__ + ": " + str(e), "kind": "error"})
    answers.append(res)
print(json.dumps({"version": jinja2.__version__, "answers": answers, "random": random_answers}, ensure_ascii=False))
`;

const names = Object.keys(templates);
const jobs = names.map((n) => ({ source: templates[n].source, bos: templates[n].bos, eos: templates[n].eos, cases: casesFor(n) }));
const randomMessages = [{ role: "user", content: "hi" }];
const randomCases = [];
for (let i = 0; i < 400; i++) randomCases.push({ name: `ws${i}`, template: wsTemplate() });
for (let i = 0; i < 600; i++) randomCases.push({ name: `expr${i}`, template: exprTemplate() });
for (let i = 0; i < 400; i++) randomCases.push({ name: `stmt${i}`, template: stmtTemplate() });
for (const c of randomCases) Object.assign(c, { messages: randomMessages, add_generation_prompt: false });
const py = spawnSync("python3", ["-c", PY], { input: JSON.stringify([jobs, randomCases]), encoding: "utf8", maxBuffer: 1 << 28 });
let pyAnswers = null, pyRandom = null, reference = "@huggingface/jinja";
if (py.status === 0) {
  const parsed = JSON.parse(py.stdout);
  pyAnswers = parsed.answers;
  pyRandom = parsed.random;
  reference = `python jinja2 ${parsed.version} in transformers' chat-template environment`;
} else {
  console.error(`python3 + jinja2 unavailable (${(py.stderr || py.error || "").toString().trim().split("\n").pop()}); using @huggingface/jinja alone`);
}

fs.mkdirSync(outDir, { recursive: true });
let total = 0, differ = 0;
names.forEach((name, ti) => {
  const t = templates[name];
  const cases = jobs[ti].cases;
  const jsDiffers = [], reports = new Map();
  const outCases = cases.map((c, ci) => {
    const js = renderJs(t, c);
    const ref = pyAnswers ? pyAnswers[ti][ci] : { ...js, kind: js.ok ? undefined : "error" };
    const agree = js.ok === ref.ok && (!js.ok || js.out === ref.out);
    if (!agree) {
      jsDiffers.push(c.name);
      const why = `@huggingface/jinja ${js.ok ? "rendered" : "failed: " + js.err}${js.ok && ref.ok ? " differently" : ""}; python ${ref.ok ? "rendered" : "failed: " + ref.err}`;
      reports.set(why, [...(reports.get(why) || []), c.name]);
    }
    total++;
    const o = { ...c };
    if (ref.ok) o.expected = ref.out;
    else {
      o.expected_error = ref.err;
      o.error_kind = ref.kind;
    }
    return o;
  });
  for (const [why, which] of reports)
    console.error(`[${name}] ${which.length > 3 ? which.length + " cases" : which.join(", ")}: ${why}`);
  differ += jsDiffers.length;
  const doc = {
    template: name,
    source: t.origin,
    bos_token: t.bos,
    eos_token: t.eos,
    generator: "scripts/goldens/gen-chat-goldens.mjs",
    reference,
    js_differs: jsDiffers,
    cases: outCases,
  };
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(doc, null, 1) + "\n");
});
// random.json: only with Python as the reference (the JS port fails most of these). Python
// prints generators and dict views by address or type; cases whose output shows one are dropped.
if (pyRandom) {
  const kept = [];
  randomCases.forEach((c, i) => {
    const r = pyRandom[i];
    if (r.ok && /<generator|<list_reverseiterator|<reversed|dict_(keys|values|items)\(/.test(r.out)) return;
    const { messages, add_generation_prompt, ...rest } = c; /* shared by all: stored once */
    kept.push(r.ok ? { ...rest, expected: r.out } : { ...rest, expected_error: r.err, error_kind: r.kind });
  });
  const doc = { template: "random", source: { per_case: true }, bos_token: null, eos_token: null,
    generator: "scripts/goldens/gen-chat-goldens.mjs", reference, js_differs: [], messages: randomMessages,
    add_generation_prompt: false, cases: kept };
  fs.writeFileSync(path.join(outDir, "random.json"), JSON.stringify(doc, null, 1) + "\n");
  total += kept.length;
}

// Fixtures for tests/cli/test_chat_template.sh: a messages file and the exact expected prompt.
const cliDir = path.join(outDir, "cli");
fs.mkdirSync(cliDir, { recursive: true });
const cliFixtures = [
  // [fixture name, template, case name, how the messages file holds the conversation]
  ["qwen3_tools", "qwen3", "tool_call_dict+gen[enable_thinking=false]", "object"],
  ["qwen3_tools_flag", "qwen3", "tools_no_system+gen", "array"],
  ["llama3_1_multi_turn", "llama3_1", "multi_turn+gen", "array"],
  ["chatml_unicode", "chatml", "unicode", "array"],
  ["mistral_bad_roles", "mistral", "tool_call_dict", "array"],
];
for (const [fixture, tname, cname, form] of cliFixtures) {
  const doc = JSON.parse(fs.readFileSync(path.join(outDir, `${tname}.json`), "utf8"));
  const c = doc.cases.find((x) => x.name === cname);
  if (!c) throw new Error(`no case ${cname} in ${tname}`);
  const msgs = form === "object" ? { messages: c.messages, tools: c.tools } : c.messages;
  fs.writeFileSync(path.join(cliDir, `${fixture}.messages.json`), JSON.stringify(msgs, null, 1) + "\n");
  if (form === "array" && c.tools) fs.writeFileSync(path.join(cliDir, `${fixture}.tools.json`), JSON.stringify(c.tools, null, 1) + "\n");
  if ("expected" in c) fs.writeFileSync(path.join(cliDir, `${fixture}.expected`), c.expected);
  else fs.writeFileSync(path.join(cliDir, `${fixture}.expected_error`), c.expected_error + "\n");
}
console.log(`wrote ${names.length} files, ${total} cases to ${path.relative(process.cwd(), outDir) || "."}; @huggingface/jinja differs from python in ${differ}`);
