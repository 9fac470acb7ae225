/* gsm8k_answer.c — scoring a model output by its last number, the way vLLM's get_answer_value
 * does (regex \d+ over the comma-free text, then ast.literal_eval), see gsm8k.h. Unicode digits
 * matter because Python's \d matches them: a trailing "１２" makes the answer invalid rather than
 * letting an earlier ASCII number count. */
#include "eval/gsm8k.h"

#include <string.h>
#include <unictype.h>
#include <unistr.h>

qs_gsm8k_answer qs_gsm8k_extract_answer(const char *text)
{
    qs_gsm8k_answer ans = {0};
    const uint8_t *s = (const uint8_t *)text;
    size_t n = strlen(text);
    /* Byte range of the last digit run in the original text; commas inside it are skipped. */
    size_t run_start = 0, run_end = 0, cur_start = 0;
    bool in_run = false, have_run = false;
    for (size_t i = 0; i < n;) {
        ucs4_t uc;
        int len = u8_mbtouc(&uc, s + i, n - i);
        if (len < 1)
            len = 1;
        if (uc == ',') {
            i += (size_t)len; /* removed before matching: never ends or starts a run */
            continue;
        }
        bool digit = uc_decimal_value(uc) >= 0;
        if (digit && !in_run) {
            in_run = true;
            cur_start = i;
        } else if (!digit && in_run) {
            in_run = false;
            have_run = true;
            run_start = cur_start;
            run_end = i;
        }
        i += (size_t)len;
    }
    if (in_run) {
        have_run = true;
        run_start = cur_start;
        run_end = n;
    }
    if (!have_run)
        return ans;
    size_t nd = 0;
    bool all_zero = true;
    for (size_t i = run_start; i < run_end; i++) {
        char c = text[i];
        if (c == ',')
            continue;
        if (c < '0' || c > '9')
            return ans; /* a non-ASCII digit: Python's literal_eval raises SyntaxError */
        if (c != '0')
            all_zero = false;
        if (nd + 1 < sizeof ans.digits)
            ans.digits[nd] = c;
        else
            ans.overlong = true;
        nd++;
    }
    if (all_zero) {
        strcpy(ans.digits, "0");
        ans.overlong = false;
    } else if (ans.digits[0] == '0') {
        return (qs_gsm8k_answer){0}; /* "007": leading zeros are a SyntaxError in Python 3 */
    } else {
        ans.digits[nd < sizeof ans.digits ? nd : sizeof ans.digits - 1] = '\0';
    }
    ans.valid = true;
    return ans;
}

qs_gsm8k_answer qs_gsm8k_label(const char *answer)
{
    const char *tail = answer, *p = answer;
    while ((p = strstr(p, "####")) != NULL) {
        tail = p + 4;
        p += 4;
    }
    return qs_gsm8k_extract_answer(tail);
}

bool qs_gsm8k_answer_equal(const qs_gsm8k_answer *a, const qs_gsm8k_answer *b)
{
    return a->valid && b->valid && !a->overlong && !b->overlong && strcmp(a->digits, b->digits) == 0;
}
