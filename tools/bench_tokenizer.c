/* bench_tokenizer.c — encoding speed on one core: `bench_tokenizer MODEL_DIR [FILE]`.
 * The corpus is FILE (one document per line; JSON lines are read as their string fields), or by
 * default GSM8K test + train questions and answers from the shared data. It prints, for the same
 * text in the same run: a PCRE2 pre-tokenisation pass alone (the baseline: the regex cost every
 * BPE tokenizer pays), a full encode with a cold word cache, and a full encode with a warm one. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"
#include "util/fileio.h"

typedef struct {
    char **doc;
    size_t n, cap, bytes;
} corpus;

static void add_doc(corpus *c, const char *s)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1024;
        c->doc = realloc(c->doc, c->cap * sizeof *c->doc);
    }
    c->doc[c->n++] = strdup(s);
    c->bytes += strlen(s);
}

/* Each line: a JSON object (its string fields joined by "\n") or plain text. */
static int read_corpus(corpus *c, const char *path)
{
    qs_err err;
    char *text;
    if (qs_read_file(path, &text, NULL, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = line[0] == '{' ? cJSON_Parse(line) : NULL;
        if (!o) {
            add_doc(c, line);
            continue;
        }
        size_t cap = strlen(line) + 1, len = 0;
        char *joined = malloc(cap);
        joined[0] = '\0';
        for (const cJSON *f = o->child; f; f = f->next)
            if (cJSON_IsString(f) && len + strlen(f->valuestring) + 2 <= cap)
                len += (size_t)sprintf(joined + len, "%s%s", len ? "\n" : "", f->valuestring);
        add_doc(c, joined);
        free(joined);
        cJSON_Delete(o);
    }
    free(text);
    return 0;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int encode_pass(const qs_tokenizer *tok, const corpus *c, size_t *n_tokens, double *secs)
{
    qs_err err;
    double t0 = cpu_s();
    *n_tokens = 0;
    for (size_t i = 0; i < c->n; i++) {
        int32_t *ids;
        size_t n;
        if (qs_tokenizer_encode(tok, c->doc[i], strlen(c->doc[i]), false, &ids, &n, &err)) {
            fprintf(stderr, "error: document %zu: %s\n", i, err.msg);
            return -1;
        }
        *n_tokens += n;
        free(ids);
    }
    *secs = cpu_s() - t0;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || !strcmp(argv[1], "--help")) {
        fprintf(argc < 2 ? stderr : stdout, "usage: bench_tokenizer MODEL_DIR [FILE]\n"
                                            "  FILE: one document per line (default: GSM8K test+train)\n");
        return argc < 2 ? 2 : 0;
    }
    qs_err err;
    qs_tokenizer *tok;
    double t0 = cpu_s();
    if (qs_tokenizer_load(argv[1], &tok, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    double load_s = cpu_s() - t0;
    corpus c = {0};
    if (argc == 3) {
        if (read_corpus(&c, argv[2]))
            return 1;
    } else {
        const char *names[] = {"gsm8k/test.jsonl", "gsm8k/train.jsonl"};
        for (int i = 0; i < 2; i++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", qs_shared_data_dir(), names[i]);
            if (read_corpus(&c, path))
                return 1;
        }
    }
    double mb = (double)c.bytes / 1e6;
    printf("tokenizer %s: loaded in %.2f s CPU; corpus %zu documents, %.2f MB\n", argv[1], load_s, c.n, mb);

    /* Baseline: the pre-tokenizer alone (PCRE2 split + byte-level prefix handling). */
    qs_tbuf buf = {0};
    size_t n_words = 0;
    t0 = cpu_s();
    for (size_t i = 0; i < c.n; i++) {
        qs_word *w;
        size_t n;
        const char *base;
        if (qs_pretokenize(tok, c.doc[i], strlen(c.doc[i]), true, &buf, &base, &w, &n, &err)) {
            fprintf(stderr, "error: %s\n", err.msg);
            return 1;
        }
        n_words += n;
        free(w);
    }
    double pre_s = cpu_s() - t0;
    qs_tbuf_free(&buf);

    size_t toks_cold, toks_warm;
    double cold_s, warm_s;
    if (encode_pass(tok, &c, &toks_cold, &cold_s) || encode_pass(tok, &c, &toks_warm, &warm_s))
        return 1;
    printf("%-34s %8.2f MB/s %12s   (%zu words)\n", "pre-tokenize only (PCRE2 baseline)", mb / pre_s, "", n_words);
    printf("%-34s %8.2f MB/s %8.2f M tok/s   (%zu tokens, %.2f of baseline speed)\n", "encode, cold word cache",
           mb / cold_s, toks_cold / cold_s / 1e6, toks_cold, pre_s / cold_s);
    printf("%-34s %8.2f MB/s %8.2f M tok/s   (%.2f of baseline speed)\n", "encode, warm word cache", mb / warm_s,
           toks_warm / warm_s / 1e6, pre_s / warm_s);
    for (size_t i = 0; i < c.n; i++)
        free(c.doc[i]);
    free(c.doc);
    qs_tokenizer_free(tok);
    return 0;
}
