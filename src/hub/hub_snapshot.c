/* hub_snapshot.c — one revision of a repo into the cache: its commit and file list from the
 * model-info API (GET /api/models/REPO/revision/REV), the files qserve reads picked from it (the
 * safetensors index first, then only the shards it names), those not yet in the snapshot fetched
 * by a bounded pool of threads, and refs/REVISION pointed at the commit at the end. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hub/hub_internal.h"

typedef struct name_list {
    char **v;
    int n, cap;
} name_list;

static int list_add(name_list *l, const char *s)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], s))
            return 0;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    return (l->v[l->n] = strdup(s)) ? (l->n++, 0) : -1;
}

static bool list_has(const name_list *l, const char *s)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], s))
            return true;
    return false;
}

static void list_free(name_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* --- the parallel pool --- */
typedef struct pool {
    const hub_fetch_ctx *ctx;
    const name_list *files;
    int next;
    pthread_mutex_t mu;
    volatile int abort_flag;
    bool failed;
    qs_err first;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int i = p->abort_flag ? p->files->n : p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->files->n)
            return NULL;
        qs_err e;
        if (hub_fetch_file(p->ctx, p->files->v[i], &e)) {
            pthread_mutex_lock(&p->mu);
            if (!p->failed) {
                p->first = e;
                p->failed = true;
            }
            p->abort_flag = 1;
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static int fetch_all(hub_fetch_ctx *ctx, const name_list *files, int max_workers, qs_err *err)
{
    if (files->n == 0)
        return 0;
    pool p = {.ctx = ctx, .files = files};
    pthread_mutex_init(&p.mu, NULL);
    ctx->abort_flag = &p.abort_flag;
    int n = max_workers < files->n ? max_workers : files->n;
    pthread_t th[64];
    int started = 0;
    for (; started < n && started < 64; started++)
        if (pthread_create(&th[started], NULL, worker, &p))
            break;
    if (started == 0)
        worker(&p);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&p.mu);
    if (p.failed) {
        *err = p.first;
        return -1;
    }
    return 0;
}

/* The files of `all` not yet in the snapshot. */
static int missing_only(const hub_repo_paths *paths, const char *commit, const name_list *all, name_list *out)
{
    for (int i = 0; i < all->n; i++) {
        char path[HUB_PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/snapshots/%s/%s", paths->repo, commit, all->v[i]);
        if (stat(path, &st) != 0 && list_add(out, all->v[i]))
            return -1;
    }
    return 0;
}

/* Reads the model-info answer: the commit and the repo's file names. */
static int parse_info(const hub_response *r, const hub_what *w, char *commit, size_t cap, name_list *siblings,
                      qs_err *err)
{
    cJSON *root = cJSON_Parse(r->body ? r->body : "");
    const cJSON *sha = root ? cJSON_GetObjectItemCaseSensitive(root, "sha") : NULL;
    const cJSON *sib = root ? cJSON_GetObjectItemCaseSensitive(root, "siblings") : NULL;
    int rc = 0;
    if (!cJSON_IsString(sha) || !hub_is_commit_hash(sha->valuestring) || !cJSON_IsArray(sib)) {
        rc = qs_errf(err, "%s (revision %s): the hub's model info has no commit \"sha\" or \"siblings\" list", w->repo_id,
                     w->revision);
    } else {
        snprintf(commit, cap, "%s", sha->valuestring);
        const cJSON *e;
        cJSON_ArrayForEach(e, sib)
        {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "rfilename");
            if (cJSON_IsString(f) && list_add(siblings, f->valuestring)) {
                rc = qs_errf(err, "out of memory");
                break;
            }
        }
    }
    cJSON_Delete(root);
    return rc;
}

int hub_snapshot_fetch(const hub_repo_paths *paths, const char *repo_id, const qs_hub_options *opt, char *commit,
                       size_t commit_cap, qs_err *err)
{
    const char *revision = opt->revision && *opt->revision ? opt->revision : "main";
    char endpoint[1024], token[1024], rev[512], url[HUB_URL_MAX];
    hub_endpoint(endpoint, sizeof endpoint);
    hub_token(token, sizeof token);
    if (hub_url_encode(revision, false, rev, sizeof rev))
        return qs_errf(err, "--revision '%s' is too long", revision);
    snprintf(url, sizeof url, "%s/api/models/%s/revision/%s", endpoint, repo_id, rev);
    hub_response r;
    if (hub_http_get(url, token, &r, err))
        return -3;
    hub_what w = {repo_id, revision, NULL};
    name_list siblings = {0}, small = {0}, shards = {0}, todo = {0};
    int rc = 0;
    if (r.status != 200)
        rc = hub_http_status_error(&r, &w, err);
    else
        rc = parse_info(&r, &w, commit, commit_cap, &siblings, err);
    hub_response_free(&r);
    hub_progress prog;
    hub_progress_init(&prog, 0, opt->quiet);
    hub_fetch_ctx ctx = {.paths = paths, .repo_id = repo_id, .revision = revision, .commit = commit,
                         .endpoint = endpoint, .token = token, .progress = &prog};
    int workers = opt->max_workers > 0 ? opt->max_workers : 8;
    const char *index = "model.safetensors.index.json";
    /* first everything but the weights (the index among them), then the shards */
    for (int i = 0; rc == 0 && i < siblings.n; i++) {
        const char *f = siblings.v[i];
        if (!hub_file_wanted(f, opt->files) || ends_with(f, ".safetensors") ||
            (ends_with(f, ".safetensors.index.json") && strcmp(f, index)))
            continue;
        if (!hub_safe_filename(f))
            rc = qs_errf(err, "%s: the hub lists a file with an unsafe name '%s'", repo_id, f);
        else if (list_add(&small, f))
            rc = qs_errf(err, "out of memory");
    }
    if (rc == 0 && opt->files == QS_HUB_FILES_MODEL && !list_has(&small, "config.json"))
        rc = qs_errf(err, "%s (revision %s) has no config.json: not a transformers model repo", repo_id, revision);
    if (rc == 0 && (rc = missing_only(paths, commit, &small, &todo)) != 0)
        qs_errf(err, "out of memory");
    prog.files_total = todo.n;
    if (rc == 0)
        rc = fetch_all(&ctx, &todo, workers, err);
    if (rc == 0 && opt->files == QS_HUB_FILES_MODEL) {
        if (list_has(&small, index)) {
            char path[HUB_PATH_MAX], **names;
            int n;
            snprintf(path, sizeof path, "%s/snapshots/%s/%s", paths->repo, commit, index);
            if ((rc = hub_index_shards(path, &names, &n, err)) == 0) {
                for (int i = 0; i < n; i++) {
                    if (rc == 0 && !list_has(&siblings, names[i]))
                        rc = qs_errf(err, "%s (revision %s): %s names the shard %s, which the repo does not have",
                                     repo_id, revision, index, names[i]);
                    if (rc == 0 && list_add(&shards, names[i]))
                        rc = qs_errf(err, "out of memory");
                    free(names[i]);
                }
                free(names);
            }
        } else if (list_has(&siblings, "model.safetensors")) {
            rc = list_add(&shards, "model.safetensors") ? qs_errf(err, "out of memory") : 0;
        } else {
            for (int i = 0; rc == 0 && i < siblings.n; i++)
                if (hub_file_wanted(siblings.v[i], opt->files) && ends_with(siblings.v[i], ".safetensors"))
                    rc = list_add(&shards, siblings.v[i]) ? qs_errf(err, "out of memory") : 0;
            if (rc == 0 && shards.n == 0)
                rc = qs_errf(err, "%s (revision %s) has no safetensors weights (qserve reads only safetensors; "
                                  ".bin/.pth/.gguf files are not used)",
                             repo_id, revision);
        }
        list_free(&todo);
        if (rc == 0 && (rc = missing_only(paths, commit, &shards, &todo)) != 0)
            qs_errf(err, "out of memory");
        pthread_mutex_lock(&prog.mu);
        prog.files_total += todo.n;
        pthread_mutex_unlock(&prog.mu);
        if (rc == 0)
            rc = fetch_all(&ctx, &todo, workers, err);
    }
    if (rc == 0)
        rc = hub_write_ref(paths, revision, commit, err);
    if (rc == 0) {
        char snap[HUB_PATH_MAX];
        hub_snapshot_dir(paths, commit, snap, sizeof snap);
        hub_progress_finish(&prog, repo_id, snap);
    } else {
        hub_progress_abort(&prog);
    }
    hub_progress_destroy(&prog);
    list_free(&siblings);
    list_free(&small);
    list_free(&shards);
    list_free(&todo);
    return rc;
}
