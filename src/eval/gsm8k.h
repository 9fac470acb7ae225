/* gsm8k.h — the GSM8K side of the harness, as vLLM's tests/evals/gsm8k/gsm8k_eval.py does it:
 * reading train/test.jsonl, building the few-shot completion prompts, and scoring an output by
 * its last number. */
#ifndef QS_EVAL_GSM8K_H
#define QS_EVAL_GSM8K_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

/* --- Answers (gsm8k_answer.c) ---
 * vLLM's get_answer_value: remove every ',', take the last run of decimal digits (Python's \d,
 * i.e. any Unicode Nd character), and parse it as a Python literal. A run with leading zeros
 * ("007"), with a non-ASCII digit, or no run at all is INVALID. There is no sign or decimal
 * handling: "-5" scores as 5 and "3.50" as 50, exactly as in vLLM. */
#define QS_GSM8K_DIGITS_MAX 64

typedef struct qs_gsm8k_answer {
    bool valid;
    bool overlong;                      /* more digits than fit: valid, but equal to no label */
    char digits[QS_GSM8K_DIGITS_MAX];   /* canonical ASCII digits ("0" for "00") */
} qs_gsm8k_answer;

qs_gsm8k_answer qs_gsm8k_extract_answer(const char *text);
/* The label of a test answer: the number after its last "####" (the whole text if none). */
qs_gsm8k_answer qs_gsm8k_label(const char *answer);
/* True when both are valid and the same number. */
bool qs_gsm8k_answer_equal(const qs_gsm8k_answer *a, const qs_gsm8k_answer *b);

/* --- Data files (gsm8k_data.c) --- */
typedef struct qs_gsm8k_row {
    char *question;
    char *answer;
} qs_gsm8k_row;

typedef struct qs_gsm8k_set {
    qs_gsm8k_row *rows;
    size_t count;
} qs_gsm8k_set;

/* Reads a .jsonl file of {"question", "answer"} objects; lines starting with '#' and blank lines
 * are skipped. A bad line is an error naming the file and line. */
int qs_gsm8k_load(const char *path, qs_gsm8k_set *out, qs_err *err);
void qs_gsm8k_free(qs_gsm8k_set *set);
/* Picks the folder holding test.jsonl and train.jsonl: `given` (--data-dir) if not NULL, else
 * $QSERVE_GSM8K_DIR, else <shared data>/gsm8k (../shared/data/gsm8k from the cwd). The error says
 * what was tried. */
int qs_gsm8k_find_data_dir(const char *given, char *out, size_t cap, qs_err *err);

/* --- Prompts (gsm8k_prompt.c) ---
 * The few-shot block is the first `shots` train rows in file order, each
 * "Question: {q}\nAnswer:{gen_prefix} {a}\n\n"; prompt i is block + "Question: {q}\nAnswer:{gen_prefix}". */
char *qs_gsm8k_fewshot_block(const qs_gsm8k_set *train, int shots, const char *gen_prefix, qs_err *err);
char *qs_gsm8k_prompt(const char *fewshot_block, const char *question, const char *gen_prefix);

#endif
