/* gsm8k_prompt.c — the few-shot completion prompts, byte for byte as vLLM builds them
 * (_build_gsm8k_prompts in gsm8k_eval.py): train answers keep their reasoning and "#### N" line. */
#include "eval/gsm8k.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *qs_gsm8k_fewshot_block(const qs_gsm8k_set *train, int shots, const char *gen_prefix, qs_err *err)
{
    if (shots < 0 || (size_t)shots > train->count) {
        qs_errf(err, "num_fewshot %d: the train set has %zu examples", shots, train->count);
        return NULL;
    }
    size_t cap = 1;
    for (int i = 0; i < shots; i++)
        cap += strlen(train->rows[i].question) + strlen(train->rows[i].answer) + strlen(gen_prefix) + 32;
    char *block = malloc(cap);
    if (!block) {
        qs_errf(err, "out of memory building the few-shot block");
        return NULL;
    }
    size_t n = 0;
    block[0] = '\0';
    for (int i = 0; i < shots; i++)
        n += (size_t)snprintf(block + n, cap - n, "Question: %s\nAnswer:%s %s\n\n", train->rows[i].question,
                              gen_prefix, train->rows[i].answer);
    return block;
}

char *qs_gsm8k_prompt(const char *fewshot_block, const char *question, const char *gen_prefix)
{
    size_t cap = strlen(fewshot_block) + strlen(question) + strlen(gen_prefix) + 32;
    char *p = malloc(cap);
    if (p)
        snprintf(p, cap, "%sQuestion: %s\nAnswer:%s", fewshot_block, question, gen_prefix);
    return p;
}
