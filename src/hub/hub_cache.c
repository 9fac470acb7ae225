/* hub_cache.c — huggingface_hub's cache layout, read and written exactly as the Python library
 * does: ROOT/models--ORG--NAME/refs/REVISION holds a commit hash (no newline),
 * blobs/ETAG holds a file's bytes, snapshots/COMMIT/FILE is a relative symlink to ../../blobs/ETAG
 * (one more ../ per subfolder of FILE), .locks/models--ORG--NAME/ETAG.lock guards a download. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hub/hub_internal.h"
#include "util/fileio.h"

int qs_hub_cache_root(const char *cache_dir, char *out, size_t cap, qs_err *err)
{
    const char *v, *home = getenv("HOME");
    int n;
    if (cache_dir && *cache_dir)
        n = snprintf(out, cap, "%s", cache_dir);
    else if ((v = getenv("HF_HUB_CACHE")) && *v)
        n = snprintf(out, cap, "%s", v);
    else if ((v = getenv("HUGGINGFACE_HUB_CACHE")) && *v)
        n = snprintf(out, cap, "%s", v);
    else if ((v = getenv("HF_HOME")) && *v)
        n = snprintf(out, cap, "%s/hub", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && *v)
        n = snprintf(out, cap, "%s/huggingface/hub", v);
    else if (home && *home)
        n = snprintf(out, cap, "%s/.cache/huggingface/hub", home);
    else
        return qs_errf(err, "no Hugging Face cache folder: set HF_HOME, HF_HUB_CACHE or HOME (or pass --download-dir)");
    if (n < 0 || (size_t)n >= cap)
        return qs_errf(err, "the Hugging Face cache path is too long");
    return 0;
}

int hub_repo_paths_init(hub_repo_paths *p, const char *cache_dir, const char *repo_id, qs_err *err)
{
    if (qs_hub_cache_root(cache_dir, p->root, sizeof p->root, err))
        return -1;
    /* huggingface_hub: "models--" + repo_id with every '/' replaced by "--" */
    size_t o = (size_t)snprintf(p->folder, sizeof p->folder, "models--");
    for (const char *c = repo_id; *c && o + 3 < sizeof p->folder; c++) {
        if (*c == '/') {
            p->folder[o++] = '-';
            p->folder[o++] = '-';
        } else {
            p->folder[o++] = *c;
        }
    }
    p->folder[o] = '\0';
    if ((size_t)snprintf(p->repo, sizeof p->repo, "%s/%s", p->root, p->folder) >= sizeof p->repo)
        return qs_errf(err, "cache path too long for %s", repo_id);
    return 0;
}

int hub_mkdirs(const char *path, qs_err *err)
{
    char buf[HUB_PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(buf, 0777) && errno != EEXIST)
            return qs_errf(err, "cannot create folder %s: %s", buf, strerror(errno));
        *s = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST)
        return qs_errf(err, "cannot create folder %s: %s", buf, strerror(errno));
    return 0;
}

int hub_read_ref(const hub_repo_paths *p, const char *revision, char *commit, size_t cap, qs_err *err)
{
    if (hub_is_commit_hash(revision)) {
        snprintf(commit, cap, "%s", revision);
        return 0;
    }
    char path[HUB_PATH_MAX];
    snprintf(path, sizeof path, "%s/refs/%s", p->repo, revision);
    char *text;
    qs_err ignored;
    if (qs_read_file(path, &text, NULL, &ignored))
        return qs_errf(err, "%s has no refs/%s (the revision was never downloaded)", p->repo, revision);
    size_t n = strcspn(text, " \t\r\n");
    text[n] = '\0';
    int rc = 0;
    if (!hub_is_commit_hash(text))
        rc = qs_errf(err, "%s: '%s' is not a commit hash", path, text);
    else
        snprintf(commit, cap, "%s", text);
    free(text);
    return rc;
}

int hub_write_ref(const hub_repo_paths *p, const char *revision, const char *commit, qs_err *err)
{
    if (!strcmp(revision, commit))
        return 0;
    char path[HUB_PATH_MAX], tmp[HUB_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/refs/%s", p->repo, revision);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    if (hub_mkdirs(path, err))
        return -1;
    *slash = '/';
    /* written beside and renamed, so a reader never sees half a hash */
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (qs_write_file(tmp, commit, strlen(commit), err))
        return -1;
    if (rename(tmp, path)) {
        unlink(tmp);
        return qs_errf(err, "cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

void hub_snapshot_dir(const hub_repo_paths *p, const char *commit, char *out, size_t cap)
{
    snprintf(out, cap, "%s/snapshots/%s", p->repo, commit);
}

void hub_blob_path(const hub_repo_paths *p, const char *etag, char *out, size_t cap)
{
    snprintf(out, cap, "%s/blobs/%s", p->repo, etag);
}

void hub_lock_path(const hub_repo_paths *p, const char *etag, char *out, size_t cap)
{
    snprintf(out, cap, "%s/.locks/%s/%s.lock", p->root, p->folder, etag);
}

int hub_link_snapshot_file(const hub_repo_paths *p, const char *commit, const char *file, const char *etag,
                           qs_err *err)
{
    char link_path[HUB_PATH_MAX], target[HUB_PATH_MAX];
    snprintf(link_path, sizeof link_path, "%s/snapshots/%s/%s", p->repo, commit, file);
    char *slash = strrchr(link_path, '/');
    *slash = '\0';
    if (hub_mkdirs(link_path, err))
        return -1;
    *slash = '/';
    /* from snapshots/COMMIT/a/b/FILE: ../../ out of snapshots/COMMIT, one ../ per subfolder */
    size_t o = (size_t)snprintf(target, sizeof target, "../../");
    for (const char *c = file; *c; c++)
        if (*c == '/')
            o += (size_t)snprintf(target + o, sizeof target - o, "../");
    snprintf(target + o, sizeof target - o, "blobs/%s", etag);
    char tmp[HUB_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", link_path, (int)getpid());
    unlink(tmp);
    if (symlink(target, tmp))
        return qs_errf(err, "cannot create the symlink %s: %s", link_path, strerror(errno));
    if (rename(tmp, link_path)) {
        unlink(tmp);
        return qs_errf(err, "cannot create the symlink %s: %s", link_path, strerror(errno));
    }
    return 0;
}
