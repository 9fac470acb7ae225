// check.mjs — what the openai-client test scripts here share: a client for a qserve base URL,
// `check` (one `ok NAME` / `not ok NAME: why` line per check, exceptions counted as failures),
// `expect`, and the exit status that says whether any check failed.
import OpenAI from "openai";

let failures = 0;

export function clientFor(baseURL, apiKey = "none") {
  return new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, timeout: 60000, maxRetries: 0 });
}

export async function check(name, fn) {
  try {
    const why = await fn();
    if (why === true) console.log(`ok ${name}`);
    else { failures++; console.log(`not ok ${name}: ${why}`); }
  } catch (e) {
    failures++;
    console.log(`not ok ${name}: ${e && e.message ? e.message : e}`);
  }
}

export const expect = (cond, why) => (cond ? true : why);

export function finish() {
  process.exit(failures ? 1 : 0);
}
