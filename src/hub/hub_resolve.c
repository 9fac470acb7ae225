/* hub_resolve.c — the one entry point every command uses (hub.h): a local folder wins; otherwise
 * the name is a repo id, brought up to date from the hub (unless offline) and answered with its
 * snapshot folder. Offline, or when the hub cannot be reached but refs/REVISION is cached, the
 * cache alone answers, and a missing file is an error naming the repo, revision and file. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hub/hub_internal.h"
#include "util/log.h"

/* Answers from the cache alone. */
static int from_cache(const hub_repo_paths *p, const char *repo_id, const char *revision, qs_hub_fileset files,
                      const char *why, char *out, size_t cap, qs_err *err)
{
    char commit[128], snap[HUB_PATH_MAX], missing[1024];
    qs_err e;
    if (hub_read_ref(p, revision, commit, sizeof commit, &e))
        return qs_errf(err, "%s: %s at revision %s is not in the cache %s (%s); download it first (qserve download %s%s%s)",
                       why, repo_id, revision, p->root, e.msg, repo_id, strcmp(revision, "main") ? " --revision " : "",
                       strcmp(revision, "main") ? revision : "");
    hub_snapshot_dir(p, commit, snap, sizeof snap);
    struct stat st;
    if (stat(snap, &st) || !S_ISDIR(st.st_mode))
        return qs_errf(err, "%s: %s at revision %s (commit %s) has no snapshot folder %s in the cache", why, repo_id,
                       revision, commit, snap);
    if (hub_snapshot_missing(snap, files, missing, sizeof missing, err))
        return -1;
    if (missing[0])
        return qs_errf(err, "%s: %s at revision %s (commit %s) lacks %s in the cache (%s)", why, repo_id, revision,
                       commit, missing, snap);
    if ((size_t)snprintf(out, cap, "%s", snap) >= cap)
        return qs_errf(err, "snapshot path too long: %s", snap);
    return 0;
}

static int resolve_repo(const char *repo_id, const qs_hub_options *opt, char *out, size_t cap, qs_err *err)
{
    const char *revision = opt->revision && *opt->revision ? opt->revision : "main";
    if (hub_check_repo_id(repo_id, err) || hub_check_revision(revision, err))
        return -1;
    hub_repo_paths p;
    if (hub_repo_paths_init(&p, opt->cache_dir, repo_id, err))
        return -1;
    if (opt->offline || qs_hub_offline_env())
        return from_cache(&p, repo_id, revision, opt->files,
                          !opt->offline         ? "offline mode (HF_HUB_OFFLINE is set)"
                          : opt->offline_why ? opt->offline_why
                                             : "offline mode (--offline)",
                          out, cap, err);
    char commit[128];
    int rc = hub_snapshot_fetch(&p, repo_id, opt, commit, sizeof commit, err);
    if (rc == -3) {
        /* as huggingface_hub: no network, but this revision is cached -> use the cache */
        qs_err cached;
        if (from_cache(&p, repo_id, revision, opt->files, "hub unreachable", out, cap, &cached) == 0) {
            qs_warn("%s; using the cached snapshot %s", err->msg, out);
            return 0;
        }
        return -1;
    }
    if (rc)
        return -1;
    char snap[HUB_PATH_MAX];
    hub_snapshot_dir(&p, commit, snap, sizeof snap);
    if ((size_t)snprintf(out, cap, "%s", snap) >= cap)
        return qs_errf(err, "snapshot path too long: %s", snap);
    return 0;
}

int qs_hub_resolve(const char *name, const qs_hub_options *opt, char *out, size_t cap, qs_err *err)
{
    if (!name || !*name)
        return qs_errf(err, "no model given (a folder or a Hugging Face repo id ORG/NAME)");
    struct stat st;
    if (stat(name, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return qs_errf(err, "'%s' is a file; a model is a folder or a Hugging Face repo id ORG/NAME", name);
        if (opt->revision && *opt->revision)
            return qs_errf(err, "revision '%s' given, but '%s' is a local folder, which has no revisions", opt->revision,
                           name);
        if ((size_t)snprintf(out, cap, "%s", name) >= cap)
            return qs_errf(err, "model path too long: '%s'", name);
        return 0;
    }
    size_t n = strlen(name);
    bool path_like = name[0] == '/' || name[0] == '.' || name[0] == '~' || name[n - 1] == '/';
    if (path_like)
        return qs_errf(err, "model folder '%s' does not exist", name);
    return resolve_repo(name, opt, out, cap, err);
}

int qs_hub_download(const char *repo_id, const qs_hub_options *opt, char *out, size_t cap, qs_err *err)
{
    struct stat st;
    if (stat(repo_id, &st) == 0)
        return qs_errf(err, "'%s' is a local path, not a Hugging Face repo id (ORG/NAME)", repo_id);
    return resolve_repo(repo_id, opt, out, cap, err);
}
