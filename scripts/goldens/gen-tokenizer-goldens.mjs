// gen-tokenizer-goldens.mjs — golden token ids from an independent implementation
// (@huggingface/tokenizers, the JS port of HF tokenizers) for tests/unit/test_tokenizer_golden.c.
//
//   cd scripts/goldens && node gen-tokenizer-goldens.mjs [SHARED_DATA_DIR]
//
// Writes tests/data/tokenizer/{qwen3,llama3_1,llama2_style,metaspace_style}.jsonl, one line per
// string: {"text": ..., "ids": [...add_special_tokens true], "ids_plain": [...false],
// "decoded": decode(ids_plain)}. The two *_style tokenizers are small Llama-2 / Mistral style
// tokenizers (byte_fallback, "▁") built here by a tiny BPE trainer and committed beside the
// goldens as tests/data/tokenizer/<name>/tokenizer.json (+ tokenizer_config.json).
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const shared = process.argv[2] ?? path.resolve(repo, "../shared/data");
const outDir = path.join(repo, "tests/data/tokenizer");

const STRINGS = [
  "",
  "Hello World",
  "Hello, world! How are you today?",
  "The quick brown fox jumps over the lazy dog.",
  " leading space",
  "trailing space ",
  "   three leading spaces and two trailing  ",
  "\n\nnewlines\n\n\nand\r\nCRLF\r\n",
  "tabs\tand\t\tmore\ttabs\t",
  "mixed \t \n whitespace \u00a0 nbsp \u3000 ideographic",
  "                                        forty spaces",
  "I'm sure you've seen it, they'll say it's what we'd do.",
  "I'M SURE YOU'VE SEEN IT, THEY'LL SAY IT'S WHAT WE'D DO.",
  "don't DON'T Don'T dOn't",
  "1234567890 12 123 1234 12345 3.14159 -42 1,000,000",
  "99999999999999999999999999999999",
  "Janet’s ducks lay 16 eggs per day. She eats three for breakfast every morning.",
  "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
  "$18 + 3*4 = <<18+3*4=30>>30\n#### 30",
  "café naïve résumé coöperate Zürich São Paulo",
  "cafe\u0301 nai\u0308ve A\u030a e\u0301e\u0301e\u0301",
  "\u1100\u1161\u11a8 Hangul jamo",
  "Ελληνικά Русский язык עברית العربية हिन्दी ไทย",
  "日本語のテキストです。東京は大きい。",
  "中文测试：你好，世界！我们今天学习分词。",
  "한국어 텍스트입니다.",
  "emoji 😀😃😄 👍🏽 🇫🇷 🏳️‍🌈",
  "family 👨‍👩‍👧‍👦 and 👩🏾‍💻 zwj sequences",
  "math ∑ ∫ √ ≤ ≥ ≠ ∞ → ⇒ ∀x∈ℝ",
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  "int main(void) { printf(\"%d\\n\", 42); return 0; }",
  "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
  "https://example.com/path?query=1&x=y#frag user@example.org",
  "<|im_start|>user\nhi<|im_end|>",
  "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nOK<|im_end|>",
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>",
  "text <|endoftext|> more text <|eot_id|>",
  "<s>[INST] Hello [/INST] Hi</s>",
  "a <mask> b<mask>c  <mask>  d",
  "not a special: <|im_start and <|fake|> and < s >",
  "!!!???...,,,;;;:::---___***",
  "ALL CAPS SENTENCE WITH SOME WORDS",
  "MiXeD CaSe WoRdS hErE",
  "x",
  " ",
  "  ",
  "\n",
  "a\u200bb zero\u200dwidth\ufeffbom",
  "\u00e9\u0301 double accent, \u1e9b\u0323 long s",
  "Control \u0001\u0002\u007f chars",
];

// Plus seeded random strings from a mixed alphabet (whitespace runs of every kind, Unicode
// spaces, combining marks, CJK, emoji/ZWJ, digits, contractions, special-token fragments) to
// catch what hand-picked strings miss.
const ALPHABET = ["a", "Z", "ing", "The", "7", "42", "123456", " ", "  ", "   ", "\n", "\n\n", "\t", "\r\n", "\r",
  "\u00a0", "\u2009", "\u3000", "\u000b", "\u0085", "'", "'s", "'LL", "n't", "!", "?!", "...", "{", "}", "\\", "\"",
  "é", "e\u0301", "\u0308", "中", "あ", "한", "😀", "\u200d", "👩", "🏽", "\u200b", "\u0001", "<|im_end|>",
  "<|eot_id|>", "<s>", "</s>", "[INST]", "<mask>", "<|", "|>", "▁", "_", "-", "$", "3.5", "x²", "ﬁ", "Ⅻ"];
let seed = 12345;
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
for (let i = 0; i < 150; i++) {
  let t = "";
  const n = 1 + (rand() % 24);
  for (let k = 0; k < n; k++) t += ALPHABET[rand() % ALPHABET.length];
  STRINGS.push(t);
}

function loadJson(p) {
  return JSON.parse(fs.readFileSync(p, "utf8"));
}

function golden(name, tokJson, cfgJson) {
  const tok = new Tokenizer(tokJson, cfgJson);
  const lines = [];
  for (const text of STRINGS) {
    const ids = tok.encode(text).ids;
    const plain = tok.encode(text, { add_special_tokens: false }).ids;
    let decoded = plain.length ? tok.decode(plain, { clean_up_tokenization_spaces: false }) : "";
    const entry = { text, ids, ids_plain: plain, decoded };
    // Known divergence: the JS ByteFallback decoder runs each byte run through a default
    // TextDecoder, which drops a leading U+FEFF (BOM); HF's Rust decoder keeps it. We record the
    // Rust answer and keep the JS one beside it.
    if (decoded !== text && decoded === text.replaceAll("\ufeff", "") && text.includes("\ufeff")) {
      entry.decoded = text;
      entry.js_decoded = decoded;
      console.log(`${name}: JS drops U+FEFF when decoding ${JSON.stringify(text)}; golden keeps it (HF Rust)`);
    }
    lines.push(JSON.stringify(entry));
  }
  fs.writeFileSync(path.join(outDir, `${name}.jsonl`), lines.join("\n") + "\n");
  console.log(`${name}: ${lines.length} strings`);
}

// Decode goldens for id sequences a model might generate, not only ones encode produces: random
// mixes of single-byte tokens (so UTF-8 is cut and left invalid), ordinary tokens and special
// tokens, decoded with and without skip_special_tokens.
function decodeGolden(name, tokJson, cfgJson) {
  const tok = new Tokenizer(tokJson, cfgJson);
  const byteIds = [];
  for (let b = 0; b < 256; b++) {
    const id = tok.token_to_id(tokJson.pre_tokenizer ? byteChar(b) : `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    if (id !== undefined) byteIds.push(id);
  }
  const specialIds = (tokJson.added_tokens ?? []).filter((t) => t.special).map((t) => t.id).slice(0, 8);
  const nVocab = Object.keys(tokJson.model.vocab).length;
  const lines = [];
  for (let i = 0; i < 100; i++) {
    const ids = [];
    const n = 1 + (rand() % 12);
    for (let k = 0; k < n; k++) {
      const r = rand() % 10;
      ids.push(r < 5 ? byteIds[rand() % byteIds.length] : r < 8 ? rand() % nVocab : specialIds[rand() % specialIds.length]);
    }
    const text = tok.decode(ids, { clean_up_tokenization_spaces: false });
    const kept = ids.filter((id) => !specialIds.includes(id));
    const text_skip = kept.length ? tok.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }) : "";
    // Hex too: the text may hold NUL bytes, which C strings and cJSON cannot carry.
    const hex = (t) => Buffer.from(t, "utf8").toString("hex");
    lines.push(JSON.stringify({ ids, text, text_skip, text_hex: hex(text), text_skip_hex: hex(text_skip) }));
  }
  fs.writeFileSync(path.join(outDir, `${name}_decode.jsonl`), lines.join("\n") + "\n");
  console.log(`${name}: ${lines.length} decode sequences`);
}

// GPT-2 byte -> unicode character, as ByteLevel vocabularies spell single bytes.
function byteChar(b) {
  const printable = (x) => (x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff);
  if (printable(b)) return String.fromCodePoint(b);
  let n = 0;
  for (let x = 0; x < b; x++) if (!printable(x)) n++;
  return String.fromCodePoint(256 + n);
}

// ---- a tiny BPE trainer for the Llama-2 / Mistral style tokenizers ----
const CORPUS = [
  "the quick brown fox jumps over the lazy dog",
  "hello world, hello there, hello again",
  "natalia sold clips to her friends in april and then she sold half as many clips in may",
  "janet's ducks lay eggs per day and she eats three for breakfast every morning",
  "how many clips did natalia sell altogether in april and may",
  "  indented  text  with  double  spaces",
  "The Quick Brown Fox. Hello World! How are you today?",
  "1234567890 3.14 math is fun",
].join("\n");

function trainBpe(text, nMerges) {
  const words = new Map();
  for (const w of ("\u2581" + text.replaceAll(" ", "\u2581").replaceAll("\n", "\u2581")).split(/(?=\u2581)/u)) {
    words.set(w, (words.get(w) ?? 0) + 1);
  }
  let seqs = [...words].map(([w, c]) => ({ syms: [...w], c }));
  const chars = new Set([...text.replaceAll(" ", "\u2581").replaceAll("\n", "\u2581")]);
  chars.add("\u2581");
  const merges = [];
  for (let m = 0; m < nMerges; m++) {
    const counts = new Map();
    for (const s of seqs)
      for (let i = 0; i + 1 < s.syms.length; i++) {
        const k = s.syms[i] + "\u0000" + s.syms[i + 1];
        counts.set(k, (counts.get(k) ?? 0) + s.c);
      }
    let best = null, bestC = 1;
    for (const [k, c] of counts) if (c > bestC || (c === bestC && best !== null && k < best)) { best = k; bestC = c; }
    if (best === null) break;
    const [a, b] = best.split("\u0000");
    merges.push([a, b]);
    for (const s of seqs) {
      const out = [];
      for (let i = 0; i < s.syms.length; i++) {
        if (i + 1 < s.syms.length && s.syms[i] === a && s.syms[i + 1] === b) { out.push(a + b); i++; }
        else out.push(s.syms[i]);
      }
      s.syms = out;
    }
  }
  const vocab = { "<unk>": 0, "<s>": 1, "</s>": 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`] = Object.keys(vocab).length;
  for (const c of [...chars].sort()) if (!(c in vocab)) vocab[c] = Object.keys(vocab).length;
  for (const [a, b] of merges) if (!((a + b) in vocab)) vocab[a + b] = Object.keys(vocab).length;
  return { vocab, merges };
}

function smallTokenizer(style) {
  const { vocab, merges } = trainBpe(CORPUS, 120);
  const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const added = [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")];
  const next = Object.keys(vocab).length;
  const model = { type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: null, end_of_word_suffix: null,
                  fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges: merges.map(([a, b]) => `${a} ${b}`) };
  const post = { type: "TemplateProcessing",
                 single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
                 pair: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
                        { SpecialToken: { id: "<s>", type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } }],
                 special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } } };
  const sentencepieceDecoder = { type: "Sequence", decoders: [
    { type: "Replace", pattern: { String: "\u2581" }, content: " " }, { type: "ByteFallback" }, { type: "Fuse" },
    { type: "Strip", content: " ", start: 1, stop: 0 }] };
  if (style === "llama2_style") {
    // Llama-2 as transformers converts it: Prepend + Replace normalizers, no pre-tokenizer.
    return { version: "1.0", truncation: null, padding: null, added_tokens: added,
             normalizer: { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "\u2581" },
                                                           { type: "Replace", pattern: { String: " " }, content: "\u2581" }] },
             pre_tokenizer: null, post_processor: post, decoder: sentencepieceDecoder, model };
  }
  // Mistral style: Metaspace pre-tokenizer (prepend_scheme "first", no split), extra added tokens.
  added.push(special(next, "[INST]"), special(next + 1, "[/INST]"),
             { id: next + 2, content: "<mask>", single_word: false, lstrip: true, rstrip: false, normalized: false, special: false });
  return { version: "1.0", truncation: null, padding: null, added_tokens: added, normalizer: null,
           pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false },
           post_processor: post, decoder: sentencepieceDecoder, model };
}

fs.mkdirSync(outDir, { recursive: true });
for (const name of ["qwen3", "llama3_1"]) {
  const dir = path.join(shared, "tokenizers", name);
  const tj = loadJson(path.join(dir, "tokenizer.json")), cfg = loadJson(path.join(dir, "tokenizer_config.json"));
  golden(name, tj, cfg);
  decodeGolden(name, tj, cfg);
}
for (const style of ["llama2_style", "metaspace_style"]) {
  const dir = path.join(outDir, style);
  fs.mkdirSync(dir, { recursive: true });
  const tj = smallTokenizer(style);
  const cfg = { bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>", add_bos_token: true, add_eos_token: false,
                clean_up_tokenization_spaces: false, tokenizer_class: "LlamaTokenizerFast" };
  fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(tj, null, 1) + "\n");
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"), JSON.stringify(cfg, null, 1) + "\n");
  golden(style, tj, cfg);
}
