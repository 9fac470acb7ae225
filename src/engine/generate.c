/* generate.c — qs_generate (generate.h): a private KV cache sized for the request, a chunked
 * prefill, then one decode step per token. Each token is sampled, checked against EOS and stop
 * ids, detokenised through the tokenizer's decode stream and fed to the stop-string matcher,
 * whose released text goes to the caller's callback and into the result. When the model samples
 * on the device and the request needs nothing the device op lacks (qs_sampling_device_ok), each
 * step brings back the next token instead of a row of logits. */
#include "engine/generate.h"
#include "model/model_tp.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/kv_cache.h"
#include "engine/stop.h"

#define PREFILL_CHUNK 256

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct text_sink {
    const qs_generate_request *req;
    char *buf;
    size_t len, cap;
} text_sink;

static int sink_add(text_sink *s, const char *text, size_t len, qs_err *err)
{
    if (!len)
        return 0;
    if (s->len + len + 1 > s->cap) {
        size_t c = s->cap ? s->cap : 256;
        while (c < s->len + len + 1)
            c *= 2;
        char *nb = realloc(s->buf, c);
        if (!nb)
            return qs_errf(err, "out of memory for the generated text");
        s->buf = nb;
        s->cap = c;
    }
    memcpy(s->buf + s->len, text, len);
    s->len += len;
    s->buf[s->len] = 0;
    if (s->req->on_text)
        s->req->on_text(s->req->on_text_ctx, text, len);
    return 0;
}

static bool is_eos(const qs_generate_request *req, int32_t id)
{
    for (int i = 0; i < req->n_eos; i++)
        if (req->eos_ids[i] == id)
            return true;
    return false;
}

typedef struct gen_run {
    qs_model *m;
    qs_kv_cache *kv;
    int32_t *table;
    int n_blocks;
    float *logits;
    qs_sampler_state *sampler;
    qs_stop_matcher *stop;
    qs_decode_stream *ds;
    bool device_sampling;      /* steps return the next token (core/sample.h) */
    int32_t next;              /* the token the last step sampled on the device, or -1 */
} gen_run;

static int setup(gen_run *r, const qs_tokenizer *tok, const qs_generate_request *req, int max_tokens, qs_err *err)
{
    const qs_model_config *mc = qs_model_get_config(r->m);
    int total = req->n_prompt + max_tokens;
    r->n_blocks = (total + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
    if (qs_kv_cache_create_dtype(mc, qs_model_device(r->m)->platform, r->n_blocks, (qs_kv_dtype)req->kv_dtype,
                                 req->kv_k_scales, req->kv_v_scales, &r->kv, err))
        return -1;
    r->table = malloc(sizeof(int32_t) * (size_t)r->n_blocks);
    r->logits = malloc(sizeof(float) * (size_t)mc->vocab_size);
    r->sampler = qs_sampler_state_new(&req->params, mc->vocab_size, req->engine_seed, 0);
    r->stop = qs_stop_new(req->stop_strings, req->n_stop_strings, req->stop_ids, req->n_stop_ids);
    r->ds = tok ? qs_decode_stream_new(tok, true) : NULL;
    if (r->ds && qs_decode_stream_prime(r->ds, req->prompt, (size_t)req->n_prompt)) /* text as it reads after the prompt */
        return qs_errf(err, "out of memory setting up generation");
    if (!r->table || !r->logits || !r->sampler || !r->stop || (tok && !r->ds))
        return qs_errf(err, "out of memory setting up generation");
    for (int i = 0; i < r->n_blocks; i++)
        r->table[i] = qs_kv_cache_alloc(r->kv);
    return 0;
}

static void teardown(gen_run *r)
{
    qs_kv_cache_free(r->kv);
    free(r->table);
    free(r->logits);
    qs_sampler_state_free(r->sampler);
    qs_stop_free(r->stop);
    qs_decode_stream_free(r->ds);
}

/* One forward step of the sequence: logits of its last token in r->logits, or, with device
 * sampling, that token's successor in r->next (else -1). */
static int step(gen_run *r, const qs_generate_request *req, const qs_seq_step *s, qs_err *err)
{
    r->next = -1;
    if (!s->want_logits || !r->device_sampling)
        return qs_model_forward(r->m, r->kv, s, 1, r->logits, err);
    qs_sample_row row = {0};
    qs_sampler_device_row(&req->params, r->sampler, &row);
    return qs_model_forward_sample(r->m, r->kv, s, 1, &row, &r->next, r->logits, err);
}

static int prefill(gen_run *r, const qs_generate_request *req, qs_err *err)
{
    for (int start = 0; start < req->n_prompt; start += PREFILL_CHUNK) {
        int n = req->n_prompt - start < PREFILL_CHUNK ? req->n_prompt - start : PREFILL_CHUNK;
        qs_seq_step s = {.tokens = req->prompt + start, .n_tokens = n, .start_pos = start, .block_table = r->table,
                         .n_blocks = (start + n + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE,
                         .want_logits = start + n == req->n_prompt};
        if (step(r, req, &s, err))
            return qs_err_prefix(err, "prefill of prompt tokens %d..%d: ", start, start + n);
    }
    return 0;
}

/* Detokenises id and runs the stop-string matcher; *stopped when a stop string completed. */
static int emit_text(gen_run *r, text_sink *sink, int32_t id, bool *stopped, qs_err *err)
{
    const char *piece, *out;
    size_t n, out_len;
    if (!r->ds)
        return 0;
    if (qs_decode_stream_push(r->ds, id, &piece, &n, err))
        return -1;
    *stopped = qs_stop_feed(r->stop, piece, n, &out, &out_len);
    return sink_add(sink, out, out_len, err);
}

static int finish_text(gen_run *r, text_sink *sink, qs_err *err)
{
    const char *piece, *out;
    size_t n, out_len;
    if (!r->ds)
        return 0;
    if (!qs_stop_matched(r->stop)) {
        qs_decode_stream_flush(r->ds, &piece, &n);
        qs_stop_feed(r->stop, piece, n, &out, &out_len);
        if (sink_add(sink, out, out_len, err))
            return -1;
    }
    qs_stop_flush(r->stop, &out, &out_len);
    return sink_add(sink, out, out_len, err);
}

/* req's max_tokens within the model's context, or -1 with err. */
static int tokens_to_generate(const qs_model *m, const qs_generate_request *req, qs_err *err)
{
    const qs_model_config *mc = qs_model_get_config(m);
    if (req->n_prompt <= 0)
        return qs_errf(err, "generate: the prompt is empty");
    int max_tokens = req->max_tokens;
    if (mc->max_position_embeddings > 0) {
        if (req->n_prompt >= mc->max_position_embeddings)
            return qs_errf(err, "generate: the prompt has %d tokens, the model's max_position_embeddings is %d",
                           req->n_prompt, mc->max_position_embeddings);
        if (max_tokens > mc->max_position_embeddings - req->n_prompt)
            max_tokens = mc->max_position_embeddings - req->n_prompt;
    }
    if (max_tokens <= 0)
        return qs_errf(err, "generate: max_tokens must be positive, got %d", req->max_tokens);
    return max_tokens;
}

int qs_generate_tp_worker(qs_model *m, const qs_generate_request *req, qs_err *err)
{
    int max_tokens = tokens_to_generate(m, req, err);
    if (max_tokens < 0)
        return -1;
    int n_blocks = (req->n_prompt + max_tokens + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE; /* as setup() */
    qs_kv_cache *kv = NULL;
    if (qs_kv_cache_create_dtype(qs_model_get_config(m), qs_model_device(m)->platform, n_blocks,
                                 (qs_kv_dtype)req->kv_dtype, req->kv_k_scales, req->kv_v_scales, &kv, err))
        return -1;
    int rc = qs_model_tp_worker(m, kv, err);
    qs_kv_cache_free(kv);
    return rc;
}

int qs_generate(qs_model *m, const qs_tokenizer *tok, const qs_generate_request *req, qs_generation *out,
                qs_err *err)
{
    memset(out, 0, sizeof(*out));
    const qs_model_config *mc = qs_model_get_config(m);
    int max_tokens = tokens_to_generate(m, req, err);
    if (max_tokens < 0)
        return -1;
    gen_run r = {.m = m,
                 .device_sampling = qs_model_samples_on_device(m) && qs_sampling_device_ok(&req->params),
                 .next = -1};
    text_sink sink = {.req = req};
    int rc = -1;
    out->tokens = malloc(sizeof(int32_t) * (size_t)max_tokens);
    if (req->params.logprobs >= 0)
        out->logprobs = calloc((size_t)max_tokens, sizeof(qs_token_logprobs));
    if (!out->tokens || (req->params.logprobs >= 0 && !out->logprobs)) {
        qs_errf(err, "out of memory for %d tokens", max_tokens);
        goto done;
    }
    if (setup(&r, tok, req, max_tokens, err))
        goto done;
    qs_sampler_observe_prompt(r.sampler, req->prompt, req->n_prompt);
    double t0 = now_seconds();
    if (prefill(&r, req, err))
        goto done;
    double t1 = now_seconds();
    out->prefill_seconds = t1 - t0;
    out->finish_reason = "length";
    for (int i = 0; i < max_tokens; i++) {
        qs_token_logprobs *lp = out->logprobs ? &out->logprobs[i] : NULL;
        int32_t id = r.next >= 0 ? r.next : qs_sample(&req->params, r.sampler, r.logits, mc->vocab_size, lp);
        out->tokens[out->n_tokens++] = id;
        qs_sampler_observe_output(r.sampler, id);
        if ((!req->ignore_eos && is_eos(req, id)) || qs_stop_is_stop_token(r.stop, id)) {
            out->finish_reason = "stop";
            break;
        }
        bool stopped = false;
        if (emit_text(&r, &sink, id, &stopped, err))
            goto done;
        if (stopped) {
            out->finish_reason = "stop";
            break;
        }
        if (i + 1 == max_tokens)
            break;
        int pos = req->n_prompt + i;
        qs_seq_step s = {.tokens = &id, .n_tokens = 1, .start_pos = pos, .block_table = r.table,
                         .n_blocks = pos / QS_KV_BLOCK_SIZE + 1, .want_logits = true};
        if (step(&r, req, &s, err)) {
            qs_err_prefix(err, "decode step %d: ", i);
            goto done;
        }
    }
    if (finish_text(&r, &sink, err))
        goto done;
    out->decode_seconds = now_seconds() - t1;
    rc = 0;
done:
    teardown(&r);
    out->text = sink.buf ? sink.buf : strdup("");
    if (rc)
        qs_generation_free(out);
    return rc;
}

void qs_generation_free(qs_generation *g)
{
    free(g->tokens);
    free(g->text);
    free(g->logprobs);
    memset(g, 0, sizeof(*g));
}
