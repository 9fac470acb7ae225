/* test_bpe_compact.c — the compact merge loop (src/tokenizer/bpe_compact.c) gives HF's merges:
 * directly against a slow reference written here from the definition (merge the pair of lowest
 * rank, leftmost on ties, until none is left), and through the encoder against bpe.c's heap loop,
 * on the words that cannot be cut (runs of one letter, of one non-ASCII character, of spaces,
 * of a short pattern) of the Llama-2-style, Llama-3.1 and Qwen3 tokenizers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h" /* compact_merges, qs_bpe_merge_compact */
#include "encode_compare.h"
#include "util/fileio.h"

static qs_tokenizer *small, *llama3, *qwen3;

static qs_tokenizer *load(const char *dir)
{
    qs_tokenizer *tok = NULL;
    qs_err err;
    if (qs_file_exists(dir) && qs_tokenizer_load(dir, &tok, &err))
        fprintf(stderr, "load %s: %s\n", dir, err.msg);
    return tok;
}

static int setup(void **state)
{
    char dir[1024];
    small = load("tests/data/tokenizer/llama2_style");
    snprintf(dir, sizeof dir, "%s/tokenizers/llama3_1", qs_shared_data_dir());
    llama3 = load(dir);
    snprintf(dir, sizeof dir, "%s/tokenizers/qwen3", qs_shared_data_dir());
    qwen3 = load(dir);
    return small ? 0 : -1;
}

static int teardown(void **state)
{
    qs_tokenizer_free(small);
    qs_tokenizer_free(llama3);
    qs_tokenizer_free(qwen3);
    return 0;
}

/* The definition, quadratically: every step scans all adjacent pairs for the lowest
 * (rank, position) and merges it in a plain array. */
static size_t reference_merge(const qs_tokenizer *tok, int32_t *ids, size_t n)
{
    for (;;) {
        size_t best = n;
        int32_t best_rank = INT32_MAX, best_made = -1;
        for (size_t i = 0; i + 1 < n; i++) {
            int32_t rank, made;
            if (qs_merges_find(&tok->merges, ids[i], ids[i + 1], &rank, &made) && rank < best_rank) {
                best = i;
                best_rank = rank;
                best_made = made;
            }
        }
        if (best == n)
            return n;
        ids[best] = best_made;
        memmove(ids + best + 1, ids + best + 2, (n - best - 2) * sizeof *ids);
        n--;
    }
}

/* Byte-level initial symbols of text, merged both ways. */
static void compact_equals_reference(const qs_tokenizer *tok, const char *text, size_t len)
{
    int32_t *ids = malloc(len * sizeof *ids), *ref = malloc(len * sizeof *ref);
    assert_non_null(ids);
    assert_non_null(ref);
    for (size_t i = 0; i < len; i++)
        ids[i] = ref[i] = tok->byte_ids[(uint8_t)text[i]];
    size_t n_ref = reference_merge(tok, ref, len);
    qs_tids out = {0};
    qs_err err;
    assert_int_equal(qs_tids_push(&out, 7), 0); /* ids of earlier words stay in front */
    assert_int_equal(qs_bpe_merge_compact(tok, ids, len, &out, &err), 0);
    assert_int_equal(out.len, 1 + n_ref);
    assert_int_equal(out.data[0], 7);
    assert_memory_equal(out.data + 1, ref, n_ref * sizeof *ref);
    free(out.data);
    free(ref);
}

/* text made of count copies of unit (then cut to len bytes) */
static char *repeat(const char *unit, size_t len)
{
    char *s = malloc(len + 1);
    assert_non_null(s);
    size_t u = strlen(unit);
    for (size_t i = 0; i < len; i++)
        s[i] = unit[i % u];
    s[len] = '\0';
    return s;
}

static void need_shared(void)
{
    if (!llama3 || !qwen3) {
        printf("skip: shared tokenizers absent under %s\n", qs_shared_data_dir());
        skip();
    }
}

static void runs_merge_as_the_reference(void **state)
{
    need_shared();
    static const char *const units[] = {"a", " ", "é", "中", "ab", "aab", "-=", "0", "\n"};
    /* lengths around the block size and odd lengths, where the pairing of a run changes */
    static const size_t lens[] = {1, 2, 3, 15, 16, 17, 31, 33, 64, 255, 1000, 3001};
    const qs_tokenizer *toks[] = {llama3, qwen3};
    for (size_t t = 0; t < 2; t++) {
        assert_true(toks[t]->compact_merges);
        for (size_t u = 0; u < sizeof units / sizeof *units; u++)
            for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
                char *s = repeat(units[u], lens[l]);
                compact_equals_reference(toks[t], s, lens[l]);
                free(s);
            }
    }
    /* random bytes from a small alphabet: many different pairs in one word */
    unsigned seed = 11;
    for (int k = 0; k < 20; k++) {
        size_t len = 1 + (size_t)(rand_r(&seed) % 2500);
        char *s = malloc(len);
        assert_non_null(s);
        for (size_t i = 0; i < len; i++)
            s[i] = "aab b\xc3\xa9"[rand_r(&seed) % 7];
        compact_equals_reference(k % 2 ? qwen3 : llama3, s, len);
        free(s);
    }
}

/* The encoder's result with the compact loop equals bpe.c's heap loop (HF's algorithm) on words
 * long enough to take the compact path. */
static void encode_equals_heap(qs_tokenizer *tok, const char *text, size_t len)
{
    qs_test_encode_same_without(tok, &tok->compact_merges, text, len);
}

static void long_runs_encode_as_the_heap_loop(void **state)
{
    static const char *const units[] = {"a", "é", "中", "ab", " ", "xyz", "\xf0\x9f\x98\x80"};
    enum { LEN = 70001 };
    for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
        size_t len = LEN - LEN % strlen(units[u]);
        char *s = repeat(units[u], len);
        encode_equals_heap(small, s, len); /* byte fallback for é, 中 and the emoji */
        if (llama3 && qwen3) {
            encode_equals_heap(llama3, s, len);
            encode_equals_heap(qwen3, s, len);
        }
        free(s);
    }
}

/* kB of the VmRSS / VmHWM (peak) line of /proc/self/status, -1 if absent. */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':')
            kb = strtol(line + n + 1, NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

/* Peak memory of encoding text, per input byte, measured in a child process: free heap memory
 * goes back to the system first (else reusing it would hide the cost) and the peak RSS is reset
 * (clear_refs 5), so the peak above the starting RSS is what the encode needs. -1 where the peak
 * cannot be reset. */
static double encode_peak_per_byte(const qs_tokenizer *tok, const char *text, size_t len)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        double per_byte = -1;
        malloc_trim(0);
        FILE *f = fopen("/proc/self/clear_refs", "w");
        bool reset = f && fputs("5", f) >= 0;
        if (f)
            reset = fclose(f) == 0 && reset;
        long before = status_kb("VmRSS");
        int32_t *ids;
        size_t n;
        qs_err err;
        if (reset && before > 0 && qs_tokenizer_encode(tok, text, len, true, &ids, &n, &err) == 0)
            per_byte = (double)(status_kb("VmHWM") - before) * 1024 / (double)len;
        (void)!write(fds[1], &per_byte, sizeof per_byte);
        _exit(0);
    }
    close(fds[1]);
    double per_byte = -1;
    assert_int_equal(read(fds[0], &per_byte, sizeof per_byte), (ssize_t)sizeof per_byte);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return per_byte;
}

/* Words that cannot be cut cost at most 8 bytes a byte to encode, the ids included (they were 12
 * to 24 with the heap loop alone). */
static void uncuttable_words_cost_at_most_8_bytes_a_byte(void **state)
{
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer's shadow memory, redzones and quarantine are RSS too: the plain build
     * checks the bound */
    printf("skip: peak RSS under AddressSanitizer is not the tokenizer's\n");
    skip();
#endif
    static const char *const units[] = {"a", " ", "é", "中"};
    enum { LEN = 4 << 20 };
    qs_tokenizer *toks[] = {small, llama3, qwen3};
    const char *names[] = {"llama2-style", "llama3.1", "qwen3"};
    for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
        size_t len = LEN - LEN % strlen(units[u]);
        char *s = repeat(units[u], len);
        for (size_t t = 0; t < 3; t++) {
            if (!toks[t])
                continue;
            double per_byte = encode_peak_per_byte(toks[t], s, len);
            if (per_byte < 0) {
                printf("skip: the peak RSS cannot be reset here (/proc/self/clear_refs)\n");
                free(s);
                skip();
            }
            printf("peak: %s, a %zu-byte run of '%s': %.1f bytes a byte\n", names[t], len, units[u], per_byte);
            assert_true(per_byte <= 8);
        }
        free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first, while the heap is as a fresh server's: the peaks are RSS */
        cmocka_unit_test(uncuttable_words_cost_at_most_8_bytes_a_byte),
        cmocka_unit_test(runs_merge_as_the_reference),
        cmocka_unit_test(long_runs_encode_as_the_heap_loop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
