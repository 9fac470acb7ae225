/* names.c — the spelling rule for kernel, backend and option names (lowercase, '-' == '_') and
 * the edit distance behind "did you mean" suggestions. */
#include "util/names.h"

#include <ctype.h>
#include <string.h>

void qs_normalize_name(char *s)
{
    for (; s && *s; s++)
        *s = *s == '-' ? '_' : (char)tolower((unsigned char)*s);
}

static int fold(char c) { return c == '-' ? '_' : tolower((unsigned char)c); }

int qs_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    int row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (fold(a[i - 1]) != fold(b[j - 1]));
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}
