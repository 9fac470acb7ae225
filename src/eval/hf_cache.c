/* hf_cache.c — local Hugging Face cache lookup (see hf_cache.h). Nothing here touches the network. */
#include "eval/hf_cache.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fileio.h"

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The hub cache folders to try, in order, without duplicates. */
static size_t cache_dirs(char dirs[][1024], size_t max)
{
    size_t n = 0;
    char buf[1024];
    const char *v;
    const char *home = getenv("HOME");
    for (int step = 0; step < 5 && n < max; step++) {
        buf[0] = '\0';
        if (step == 0 && (v = getenv("HF_HUB_CACHE")) && *v)
            snprintf(buf, sizeof buf, "%s", v);
        else if (step == 1 && (v = getenv("HUGGINGFACE_HUB_CACHE")) && *v)
            snprintf(buf, sizeof buf, "%s", v);
        else if (step == 2 && (v = getenv("HF_HOME")) && *v)
            snprintf(buf, sizeof buf, "%s/hub", v);
        else if (step == 3 && (v = getenv("XDG_CACHE_HOME")) && *v)
            snprintf(buf, sizeof buf, "%s/huggingface/hub", v);
        else if (step == 4 && home && *home)
            snprintf(buf, sizeof buf, "%s/.cache/huggingface/hub", home);
        if (!buf[0])
            continue;
        bool dup = false;
        for (size_t i = 0; i < n; i++)
            dup |= !strcmp(dirs[i], buf);
        if (!dup)
            snprintf(dirs[n++], sizeof dirs[0], "%s", buf);
    }
    return n;
}

/* Picks the snapshot of one cached repo folder; fills why with the reason on failure. */
static int pick_snapshot(const char *repo_dir, char *out, size_t cap, char *why, size_t why_cap)
{
    char path[2048], rev[256] = "";
    snprintf(path, sizeof path, "%s/refs/main", repo_dir);
    char *ref;
    qs_err ignored;
    if (qs_read_file(path, &ref, NULL, &ignored) == 0) {
        size_t len = strcspn(ref, " \t\r\n");
        if (len > 0 && len < sizeof rev) {
            memcpy(rev, ref, len);
            rev[len] = '\0';
        }
        free(ref);
        snprintf(path, sizeof path, "%s/snapshots/%s", repo_dir, rev);
        if (rev[0] && is_dir(path)) {
            snprintf(out, cap, "%s", path);
            return 0;
        }
    }
    snprintf(path, sizeof path, "%s/snapshots", repo_dir);
    DIR *d = opendir(path);
    if (!d) {
        snprintf(why, why_cap, "%s has no snapshots folder", repo_dir);
        return -1;
    }
    char best[1024] = "";
    struct timespec best_time = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char snap[2048];
        snprintf(snap, sizeof snap, "%s/%s", path, e->d_name);
        struct stat st;
        if (stat(snap, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        bool newer = !best[0] || st.st_mtim.tv_sec > best_time.tv_sec ||
                     (st.st_mtim.tv_sec == best_time.tv_sec && st.st_mtim.tv_nsec > best_time.tv_nsec);
        if (newer) {
            snprintf(best, sizeof best, "%s", e->d_name);
            best_time = st.st_mtim;
        }
    }
    closedir(d);
    if (!best[0]) {
        snprintf(why, why_cap, "%s has no snapshot", path);
        return -1;
    }
    snprintf(out, cap, "%s/%s", path, best);
    return 0;
}

int qs_hf_resolve_model(const char *model_name, char *out, size_t cap, qs_err *err)
{
    if (is_dir(model_name)) {
        if ((size_t)snprintf(out, cap, "%s", model_name) >= cap)
            return qs_errf(err, "model path too long: '%s'", model_name);
        return 0;
    }
    /* models--ORG--NAME: every '/' of the id becomes "--". */
    char repo[512] = "models--";
    for (const char *p = model_name; *p && strlen(repo) + 3 < sizeof repo; p++) {
        if (*p == '/')
            strcat(repo, "--");
        else
            strncat(repo, p, 1);
    }
    char dirs[5][1024];
    size_t n = cache_dirs(dirs, 5);
    char looked[QS_ERR_MSG_MAX / 2];
    snprintf(looked, sizeof looked, "%s (not a directory)", model_name);
    for (size_t i = 0; i < n; i++) {
        char repo_dir[2048], why[1024];
        snprintf(repo_dir, sizeof repo_dir, "%s/%s", dirs[i], repo);
        if (!is_dir(repo_dir)) {
            snprintf(why, sizeof why, "%s (absent)", repo_dir);
        } else if (pick_snapshot(repo_dir, out, cap, why, sizeof why) == 0) {
            return 0;
        }
        size_t len = strlen(looked);
        snprintf(looked + len, sizeof looked - len, "; %s", why);
    }
    return qs_errf(err, "model '%s' not found locally (nothing is downloaded): not a directory, not in a "
                        "Hugging Face cache; looked in: %s",
                   model_name, looked);
}
