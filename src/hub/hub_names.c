/* hub_names.c — the names the hub code handles, checked before they become paths or URLs: repo
 * ids, revisions, repo file names sent by the server, ETags (they name blobs); URL encoding. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "hub/hub_internal.h"

static bool id_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.'; }

static bool check_part(const char *s, size_t n)
{
    if (n == 0 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!id_char(s[i]))
            return false;
    return true;
}

int hub_check_repo_id(const char *id, qs_err *err)
{
    size_t len = strlen(id);
    const char *slash = strchr(id, '/');
    bool ok = len > 0 && len <= 96 && !strstr(id, "--") && !strstr(id, "..");
    if (ok && slash)
        ok = !strchr(slash + 1, '/') && check_part(id, (size_t)(slash - id)) && check_part(slash + 1, strlen(slash + 1));
    else if (ok)
        ok = check_part(id, len);
    if (ok && len >= 4 && !strcmp(id + len - 4, ".git"))
        ok = false;
    if (!ok)
        return qs_errf(err,
                       "'%s' is neither a local folder nor a Hugging Face repo id (ORG/NAME: letters, digits, '-', "
                       "'_', '.'; at most 96 characters; no '--' or '..')",
                       id);
    return 0;
}

int hub_check_revision(const char *rev, qs_err *err)
{
    bool ok = rev[0] && rev[0] != '/' && strlen(rev) < 200 && !strstr(rev, "..") && !strstr(rev, "//");
    for (const char *p = rev; ok && *p; p++)
        ok = (unsigned char)*p > ' ' && *p != '\\' && *p != 0x7f;
    if (!ok)
        return qs_errf(err, "--revision '%s' is not a usable branch, tag or commit name", rev);
    return 0;
}

bool hub_safe_filename(const char *name)
{
    if (!name[0] || name[0] == '/' || strlen(name) > 1000 || strchr(name, '\\'))
        return false;
    const char *p = name;
    while (*p) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)p[i] < ' ')
                return false;
        p += n;
        if (*p == '/')
            p++;
        if (!*p && p[-1] == '/')
            return false;
    }
    return true;
}

bool hub_is_commit_hash(const char *rev)
{
    if (strlen(rev) != 40)
        return false;
    for (int i = 0; i < 40; i++)
        if (!isxdigit((unsigned char)rev[i]))
            return false;
    return true;
}

int hub_url_encode(const char *s, bool keep_slash, char *out, size_t cap)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' || (keep_slash && *p == '/');
        if (o + 4 >= cap)
            return -1;
        if (plain)
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, cap - o, "%%%02X", *p);
    }
    out[o] = '\0';
    return 0;
}

bool hub_normalize_etag(char *etag)
{
    char *s = etag;
    if (s[0] == 'W' && s[1] == '/')
        s += 2;
    if (*s == '"')
        s++;
    size_t n = strcspn(s, "\"");
    memmove(etag, s, n);
    etag[n] = '\0';
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)etag[i]))
            return false;
        etag[i] = (char)tolower((unsigned char)etag[i]);
    }
    return true;
}
