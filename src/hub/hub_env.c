/* hub_env.c — the environment huggingface_hub reads, read the same way: HF_ENDPOINT, HF_TOKEN
 * (and the token file `huggingface-cli login` writes), HF_HUB_OFFLINE. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hub/hub_internal.h"
#include "util/fileio.h"

void hub_endpoint(char *out, size_t cap)
{
    const char *e = getenv("HF_ENDPOINT");
    snprintf(out, cap, "%s", e && *e ? e : "https://huggingface.co");
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
}

/* Copies s without surrounding white space. */
static void trimmed(const char *s, char *out, size_t cap)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    snprintf(out, cap, "%.*s", (int)n, s);
}

void hub_token(char *out, size_t cap)
{
    out[0] = '\0';
    const char *v = getenv("HF_TOKEN");
    if (!v || !*v)
        v = getenv("HUGGING_FACE_HUB_TOKEN");
    if (v && *v) {
        trimmed(v, out, cap);
        return;
    }
    char path[HUB_PATH_MAX];
    const char *home = getenv("HOME"), *hf_home = getenv("HF_HOME"), *xdg = getenv("XDG_CACHE_HOME");
    if ((v = getenv("HF_TOKEN_PATH")) && *v)
        snprintf(path, sizeof path, "%s", v);
    else if (hf_home && *hf_home)
        snprintf(path, sizeof path, "%s/token", hf_home);
    else if (xdg && *xdg)
        snprintf(path, sizeof path, "%s/huggingface/token", xdg);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/.cache/huggingface/token", home);
    else
        return;
    char *text;
    qs_err ignored;
    if (qs_read_file(path, &text, NULL, &ignored) == 0) {
        trimmed(text, out, cap);
        free(text);
    }
}

bool qs_hub_offline_env(void)
{
    const char *v = getenv("HF_HUB_OFFLINE");
    if (!v)
        return false;
    return !strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on");
}
