/* hub_http.c — the hub's HTTP through libcurl: GET (model-info JSON), HEAD (a file's metadata:
 * X-Repo-Commit, ETag / X-Linked-Etag, X-Linked-Size, Location), file downloads with Range, and
 * the errors that name their cause (401/403 gated or private, 404, unreachable endpoint). */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hub/hub_internal.h"

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

void hub_response_free(hub_response *r)
{
    free(r->body);
    r->body = NULL;
    r->body_len = 0;
}

static void response_reset(hub_response *r)
{
    char *body = r->body;
    size_t len = r->body_len;
    memset(r, 0, sizeof *r);
    r->body = body;
    r->body_len = len;
    r->linked_size = r->content_length = -1;
}

/* Copies a header value (after "Name:") without white space around it. */
static void header_value(const char *v, size_t n, char *out, size_t cap)
{
    while (n > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, v, n);
    out[n] = '\0';
}

/* Each response's headers replace the previous one's (redirects): a status line resets. */
static size_t on_header(char *buf, size_t size, size_t nitems, void *ud)
{
    hub_response *r = ud;
    size_t n = size * nitems;
    if (n >= 5 && !strncmp(buf, "HTTP/", 5)) {
        response_reset(r);
        const char *sp = memchr(buf, ' ', n);
        if (sp)
            r->status = strtol(sp + 1, NULL, 10);
        return n;
    }
    const char *colon = memchr(buf, ':', n);
    if (!colon)
        return n;
    size_t kl = (size_t)(colon - buf);
    const char *v = colon + 1;
    size_t vl = n - kl - 1;
    char num[32];
#define IS(name) (kl == strlen(name) && !strncasecmp(buf, name, kl))
    if (IS("X-Repo-Commit"))
        header_value(v, vl, r->commit, sizeof r->commit);
    else if (IS("ETag"))
        header_value(v, vl, r->etag, sizeof r->etag);
    else if (IS("X-Linked-Etag"))
        header_value(v, vl, r->linked_etag, sizeof r->linked_etag);
    else if (IS("Location"))
        header_value(v, vl, r->location, sizeof r->location);
    else if (IS("X-Error-Code"))
        header_value(v, vl, r->error_code, sizeof r->error_code);
    else if (IS("X-Error-Message"))
        header_value(v, vl, r->error_message, sizeof r->error_message);
    else if (IS("X-Linked-Size") || IS("Content-Length")) {
        header_value(v, vl, num, sizeof num);
        long long x = strtoll(num, NULL, 10);
        if (IS("X-Linked-Size"))
            r->linked_size = x;
        else
            r->content_length = x;
    }
#undef IS
    return n;
}

static size_t on_body(char *buf, size_t size, size_t nitems, void *ud)
{
    hub_response *r = ud;
    size_t n = size * nitems;
    if (r->body_len + n > (64u << 20))
        return 0; /* a model-info answer is far smaller */
    char *b = realloc(r->body, r->body_len + n + 1);
    if (!b)
        return 0;
    memcpy(b + r->body_len, buf, n);
    r->body = b;
    r->body_len += n;
    b[r->body_len] = '\0';
    return n;
}

static CURL *new_handle(const char *url, const char *token, hub_response *r, struct curl_slist **headers)
{
    pthread_once(&g_curl_once, curl_init_once);
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* http(s) only, also where a redirect points (never file:// or others) */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    /* a transfer stalled below 1 byte/s for a minute is given up */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "qserve/0.1 (libcurl)");
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    *headers = curl_slist_append(NULL, "Accept-Encoding: identity");
    if (token && *token) {
        char auth[1024];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        *headers = curl_slist_append(*headers, auth);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *headers);
    response_reset(r);
    return c;
}

static int unreachable(const char *url, CURLcode rc, const char *detail, qs_err *err)
{
    /* name the endpoint: scheme://host[:port] of the url */
    char host[512];
    const char *p = strstr(url, "://");
    size_t n = p ? (size_t)(strcspn(p + 3, "/") + (size_t)(p + 3 - url)) : strlen(url);
    snprintf(host, sizeof host, "%.*s", (int)n, url);
    return qs_errf(err, "cannot reach the Hugging Face endpoint %s (%s%s%s); check the network or HF_ENDPOINT, or "
                        "use --offline / HF_HUB_OFFLINE=1 to run from the cache",
                   host, curl_easy_strerror(rc), detail[0] ? ": " : "", detail);
}

int hub_http_get(const char *url, const char *token, hub_response *r, qs_err *err)
{
    struct curl_slist *h = NULL;
    r->body = NULL;
    r->body_len = 0;
    CURL *c = new_handle(url, token, r, &h);
    if (!c)
        return qs_errf(err, "cannot start libcurl");
    char detail[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        hub_response_free(r);
        return unreachable(url, rc, detail, err);
    }
    return 0;
}

int hub_http_head(const char *url, const char *token, hub_response *r, qs_err *err)
{
    char cur[HUB_URL_MAX];
    snprintf(cur, sizeof cur, "%s", url);
    r->body = NULL; /* a HEAD has no body */
    r->body_len = 0;
    for (int hop = 0; hop < 5; hop++) {
        struct curl_slist *h = NULL;
        CURL *c = new_handle(cur, token, r, &h);
        if (!c)
            return qs_errf(err, "cannot start libcurl");
        char detail[CURL_ERROR_SIZE] = "";
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
        CURLcode rc = curl_easy_perform(c);
        curl_easy_cleanup(c);
        curl_slist_free_all(h);
        if (rc != CURLE_OK)
            return unreachable(cur, rc, detail, err);
        /* huggingface_hub follows only relative redirects here (a renamed repo); an absolute one
         * (the CDN holding an LFS file) ends the walk: this response's headers are the metadata. */
        if (r->status < 300 || r->status > 399 || !r->location[0] || r->location[0] != '/')
            return 0;
        const char *p = strstr(cur, "://");
        size_t origin = p ? (size_t)(p + 3 - cur) + strcspn(p + 3, "/") : 0;
        char next[HUB_URL_MAX];
        snprintf(next, sizeof next, "%.*s%s", (int)origin, cur, r->location);
        snprintf(cur, sizeof cur, "%s", next);
    }
    return qs_errf(err, "too many redirects from %s", url);
}

int hub_http_status_error(const hub_response *r, const hub_what *w, qs_err *err)
{
    char what[1024];
    snprintf(what, sizeof what, "%s (revision %s%s%s)", w->repo_id, w->revision, w->file ? ", file " : "",
             w->file ? w->file : "");
    const char *code = r->error_code;
    char server[300] = "";
    if (r->error_message[0])
        snprintf(server, sizeof server, "; the hub says: %s", r->error_message);
    if (!strcmp(code, "GatedRepo"))
        return qs_errf(err, "%s: HTTP %ld: a gated repo; accept its terms on the hub and set HF_TOKEN to a token that "
                            "has access%s",
                       what, r->status, server);
    if (!strcmp(code, "RepoNotFound"))
        return qs_errf(err, "%s: HTTP %ld: no such repo, or a private one (set HF_TOKEN to a token that can read it)%s",
                       what, r->status, server);
    if (!strcmp(code, "RevisionNotFound"))
        return qs_errf(err, "%s: HTTP %ld: no such revision '%s' in this repo%s", what, r->status, w->revision,
                       server);
    if (!strcmp(code, "EntryNotFound"))
        return qs_errf(err, "%s: HTTP %ld: no such file in this revision%s", what, r->status, server);
    if (r->status == 401 || r->status == 403)
        return qs_errf(err, "%s: HTTP %ld: a gated or private repo (or a token without access): set HF_TOKEN (or log "
                            "in with huggingface-cli login)%s",
                       what, r->status, server);
    if (r->status == 404)
        return qs_errf(err, "%s: HTTP 404: no such repo or revision%s", what, server);
    if (r->status == 416)
        return qs_errf(err, "%s: HTTP 416: the server refused the resumed range%s", what, server);
    return qs_errf(err, "%s: unexpected HTTP status %ld from the hub%s", what, r->status, server);
}

typedef struct dl_state {
    CURL *curl;
    long long offset;
    hub_data_cb on_data;
    void *ctx;
    volatile int *abort_flag;
    bool checked;  /* the final response's status was looked at */
    bool discard;  /* an error answer: its body is not file content */
    bool data_failed;
} dl_state;

static size_t on_download(char *buf, size_t size, size_t nitems, void *ud)
{
    dl_state *s = ud;
    size_t n = size * nitems;
    if (!s->checked) {
        long status = 0;
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
        s->checked = true;
        s->discard = status != 200 && status != 206;
        /* a server that ignores Range answers 200: the file starts over */
        if (status == 200 && s->offset > 0 && s->on_data(s->ctx, NULL, 0)) {
            s->data_failed = true;
            return 0;
        }
    }
    if (s->discard)
        return n;
    if (s->on_data(s->ctx, buf, n)) {
        s->data_failed = true;
        return 0;
    }
    return n;
}

static int on_xfer(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    dl_state *s = ud;
    return s->abort_flag && *s->abort_flag ? 1 : 0;
}

int hub_http_download(const char *url, const char *token, long long offset, hub_data_cb on_data, void *ctx,
                      volatile int *abort_flag, hub_response *r, qs_err *err)
{
    struct curl_slist *h = NULL;
    r->body = NULL;
    r->body_len = 0;
    CURL *c = new_handle(url, token, r, &h);
    if (!c)
        return qs_errf(err, "cannot start libcurl");
    dl_state s = {.curl = c, .offset = offset, .on_data = on_data, .ctx = ctx, .abort_flag = abort_flag};
    char detail[CURL_ERROR_SIZE] = "", range[64];
    if (offset > 0) {
        snprintf(range, sizeof range, "%lld-", offset);
        curl_easy_setopt(c, CURLOPT_RANGE, range);
    }
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_download);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_xfer);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &s);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    if (s.data_failed)
        return -2; /* on_data's own failure (its context says which) */
    if (rc == CURLE_ABORTED_BY_CALLBACK)
        return qs_errf(err, "stopped (another download failed)");
    if (rc != CURLE_OK && s.checked && !s.discard)
        return qs_errf(err, "the download was interrupted (%s%s%s)", curl_easy_strerror(rc), detail[0] ? ": " : "",
                       detail);
    if (rc != CURLE_OK)
        return unreachable(url, rc, detail, err);
    return 0;
}
