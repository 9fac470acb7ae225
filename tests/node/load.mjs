// load.mjs — concurrency and hostile-input checks against a running qserve (loopback only).
//   node load.mjs BASE_URL reference OUT.json   each prompt run alone, greedy; texts saved
//   node load.mjs BASE_URL burst REF.json       64 clients at once, mixed streaming / not, each
//                                               greedy text must equal its reference
//   node load.mjs BASE_URL hostile REF.json     malformed and hostile requests interleaved with
//                                               good ones; every good one must succeed
// Every loop is bounded in count and time. Prints `ok NAME` / `not ok NAME: why`.
import fs from "node:fs";
import net from "node:net";

const [base, mode, refPath] = process.argv.slice(2);
const url = new URL(base);
const CLIENTS = 64;
const deadline = Date.now() + 90_000;

const words = ["Once upon a time", "The little dog", "Lily and Tom", "One day, a bird", "The sun was",
               "A big red ball", "Mom said", "In the park", "The cat sat", "Ben wanted to",
               "There was a tree", "The fish swam", "At night", "The boy ran", "She found a", "The rain"];
const jobs = words.map((prompt, i) => ({ prompt, max_tokens: 8 + (i * 7) % 40 }));

async function complete(job, stream) {
  const body = { model: "stories", prompt: job.prompt, max_tokens: job.max_tokens, temperature: 0, stream };
  const res = await fetch(`${base}/v1/completions`, { method: "POST", body: JSON.stringify(body),
                                                       headers: { "Content-Type": "application/json" },
                                                       signal: AbortSignal.timeout(60_000) });
  if (res.status !== 200) return { status: res.status, text: null, body: await res.text() };
  if (!stream) {
    const r = await res.json();
    return { status: 200, text: r.choices[0].text, finish: r.choices[0].finish_reason };
  }
  const raw = await res.text();
  let text = "", done = false, finish = null;
  for (const line of raw.split("\n")) {
    if (line === "data: [DONE]") { done = true; continue; }
    if (!line.startsWith("data: ")) continue;
    const c = JSON.parse(line.slice(6));
    for (const ch of c.choices) { text += ch.text; if (ch.finish_reason) finish = ch.finish_reason; }
  }
  return { status: done ? 200 : -1, text, finish };
}

let failures = 0;
const report = (name, okay, why) => {
  if (okay) console.log(`ok ${name}`);
  else { failures++; console.log(`not ok ${name}: ${why}`); }
};

async function runGoodClients(ref, count, perClient) {
  const bad = [];
  let served = 0;
  await Promise.all(Array.from({ length: count }, async (_, c) => {
    for (let k = 0; k < perClient && Date.now() < deadline; k++) {
      const i = (c * 5 + k * 3) % jobs.length;
      const stream = (c + k) % 2 === 0;
      try {
        const r = await complete(jobs[i], stream);
        if (r.status !== 200) bad.push(`client ${c}: status ${r.status} ${r.body || ""}`.slice(0, 200));
        else if (r.text !== ref[i]) bad.push(`client ${c} prompt ${i} ${stream ? "stream" : "whole"}: ${JSON.stringify(r.text)} != ${JSON.stringify(ref[i])}`);
        else served++;
      } catch (e) {
        bad.push(`client ${c}: ${e.message}`);
      }
    }
  }));
  return { bad, served };
}

// Raw socket request: writes `data` (optionally one byte at a time), returns the status line.
function rawRequest(data, { byteDelayMs = 0, maxMs = 15_000 } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(Number(url.port), url.hostname);
    let got = "";
    const finish = (v) => { clearTimeout(timer); sock.destroy(); resolve(v); };
    const timer = setTimeout(() => finish(got.split("\r\n")[0] || "timeout"), maxMs);
    sock.on("data", (d) => { got += d.toString("latin1"); if (got.includes("\r\n\r\n")) finish(got.split("\r\n")[0]); });
    sock.on("error", () => finish(got.split("\r\n")[0] || "closed"));
    sock.on("close", () => finish(got.split("\r\n")[0] || "closed"));
    sock.on("connect", async () => {
      const buf = Buffer.isBuffer(data) ? data : Buffer.from(data, "latin1");
      if (!byteDelayMs) { sock.write(buf); return; }
      for (let i = 0; i < buf.length && !sock.destroyed; i++) {
        sock.write(buf.subarray(i, i + 1));
        await new Promise((r) => setTimeout(r, byteDelayMs));
      }
    });
  });
}

function post(path, body, extra = "") {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body, "latin1");
  const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${b.length}\r\n${extra}Connection: close\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), b]);
}

async function hostile() {
  const nested = "{\"prompt\":" + "[".repeat(200_000) + "]".repeat(200_000) + "}";
  const cases = [
    ["invalid_utf8", post("/v1/completions", Buffer.from([0x7b, 0x22, 0x70, 0x72, 0x6f, 0x6d, 0x70, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xc3, 0x28, 0x22, 0x7d])), /^HTTP\/1\.1 400/],
    ["huge_numbers", post("/v1/completions", '{"prompt":"x","max_tokens":1e999999,"n":123456789012345678901234567890}'), /^HTTP\/1\.1 400/],
    ["deeply_nested_json", post("/v1/completions", nested), /^HTTP\/1\.1 400/],
    ["ten_megabyte_body", post("/v1/completions", "{\"prompt\":\"" + "a".repeat(10 * 1024 * 1024) + "\"}"), /^HTTP\/1\.1 413|^closed/],
    ["garbage_bytes", Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) % 256)), /^HTTP\/1\.1 4\d\d|^closed/],
    ["truncated_body", Buffer.from("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"prompt\":", "latin1"), /.*/, { maxMs: 2000 }],
    ["wrong_types", post("/v1/chat/completions", '{"messages":[{"role":1,"content":{"a":[]}}],"stop":{"x":1}}'), /^HTTP\/1\.1 400/],
    ["null_bytes_in_json", post("/v1/completions", Buffer.from('{"prompt":"a\u0000b","max_tokens":2}', "latin1")), /^HTTP\/1\.1 (200|400)/],
    ["bad_content_length", Buffer.from("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", "latin1"), /^HTTP\/1\.1 4\d\d|^closed/],
    ["huge_logit_bias", post("/v1/completions", JSON.stringify({ prompt: "x", logit_bias: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [String(i), 1])) })), /^HTTP\/1\.1 400/],
  ];
  const slow = rawRequest(post("/v1/completions", '{"prompt":"Once upon a time","max_tokens":4,"temperature":0}'), { byteDelayMs: 20, maxMs: 20_000 });
  const results = await Promise.all(cases.map(([, data, , opts]) => rawRequest(data, opts)));
  cases.forEach(([name, , want], i) => report(`hostile_${name}`, want.test(results[i]), results[i]));
  report("hostile_slow_client_byte_at_a_time", /^HTTP\/1\.1 200/.test(await slow), "slow client not served");
}

if (mode === "reference") {
  const ref = [];
  for (const job of jobs) {
    const r = await complete(job, false);
    if (r.status !== 200) { console.log(`not ok reference: ${r.status} ${r.body}`); process.exit(1); }
    ref.push(r.text);
  }
  fs.writeFileSync(refPath, JSON.stringify(ref));
  console.log("ok reference_runs_alone");
} else if (mode === "burst") {
  const ref = JSON.parse(fs.readFileSync(refPath, "utf8"));
  const t0 = Date.now();
  const { bad, served } = await runGoodClients(ref, CLIENTS, 3);
  report("burst_64_clients_no_failure_identical_greedy", bad.length === 0 && served === CLIENTS * 3,
         `${served}/${CLIENTS * 3} good; ${bad.slice(0, 3).join(" | ")}`);
  console.error(`burst: ${served} requests in ${(Date.now() - t0) / 1000}s`);
} else if (mode === "hostile") {
  const ref = JSON.parse(fs.readFileSync(refPath, "utf8"));
  const good = runGoodClients(ref, 16, 3);
  await hostile();
  const { bad, served } = await good;
  report("good_requests_succeed_among_hostile_ones", bad.length === 0 && served === 48,
         `${served}/48 good; ${bad.slice(0, 3).join(" | ")}`);
}
process.exit(failures ? 1 : 0);
