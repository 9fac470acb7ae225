/* hub_internal.h — what the files of src/hub share: names and their checks (hub_names.c), the
 * environment (hub_env.c), cache paths (hub_cache.c), HTTP (hub_http.c), sha256 (hub_sha256.c),
 * progress (hub_progress.c), the file selection (hub_files.c), one file's download
 * (hub_fetch_file.c) and a whole snapshot's (hub_snapshot.c). Not for use outside src/hub. */
#ifndef QS_HUB_INTERNAL_H
#define QS_HUB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "hub/hub.h"
#include "util/error.h"

#define HUB_PATH_MAX 4096
#define HUB_URL_MAX 4096

/* --- hub_names.c --- */
/* huggingface_hub's repo id rule: [ORG/]NAME of letters, digits, '-', '_', '.', at most 96
 * characters, no "--" or "..", not starting or ending with '-' or '.', not ending in ".git". */
int hub_check_repo_id(const char *id, qs_err *err);
/* A revision: non-empty, no "..", no leading '/', no control characters or spaces. */
int hub_check_revision(const char *rev, qs_err *err);
/* A repo file name from the server: relative, no "..", "." or empty components, no backslash. */
bool hub_safe_filename(const char *name);
/* 40 hex digits. */
bool hub_is_commit_hash(const char *rev);
/* Percent-encodes s into out; '/' is kept when keep_slash. */
int hub_url_encode(const char *s, bool keep_slash, char *out, size_t cap);
/* Strips W/ and quotes from an ETag in place; false unless the rest is 1..128 hex digits. */
bool hub_normalize_etag(char *etag);

/* --- hub_env.c --- */
/* $HF_ENDPOINT without a trailing '/', default https://huggingface.co. */
void hub_endpoint(char *out, size_t cap);
/* $HF_TOKEN (or $HUGGING_FACE_HUB_TOKEN), else the file $HF_TOKEN_PATH, $HF_HOME/token or
 * ~/.cache/huggingface/token; "" when none. */
void hub_token(char *out, size_t cap);

/* --- hub_cache.c --- */
typedef struct hub_repo_paths {
    char root[HUB_PATH_MAX]; /* the cache root */
    char repo[HUB_PATH_MAX]; /* ROOT/models--ORG--NAME */
    char folder[512];        /* models--ORG--NAME */
} hub_repo_paths;
int hub_repo_paths_init(hub_repo_paths *p, const char *cache_dir, const char *repo_id, qs_err *err);
/* The commit refs/REVISION names; -1 (err set) if there is none. A commit hash is itself. */
int hub_read_ref(const hub_repo_paths *p, const char *revision, char *commit, size_t cap, qs_err *err);
/* Writes refs/REVISION = commit (no newline, as huggingface_hub), unless revision is the commit. */
int hub_write_ref(const hub_repo_paths *p, const char *revision, const char *commit, qs_err *err);
void hub_snapshot_dir(const hub_repo_paths *p, const char *commit, char *out, size_t cap);
void hub_blob_path(const hub_repo_paths *p, const char *etag, char *out, size_t cap);
void hub_lock_path(const hub_repo_paths *p, const char *etag, char *out, size_t cap);
/* Makes snapshots/COMMIT/FILE a relative symlink to blobs/ETAG (parents created). */
int hub_link_snapshot_file(const hub_repo_paths *p, const char *commit, const char *file, const char *etag,
                           qs_err *err);
/* mkdir -p. */
int hub_mkdirs(const char *path, qs_err *err);

/* --- hub_files.c --- */
/* Whether qserve reads this repo file in this file set (weights: only the top-level safetensors
 * files; never .bin/.pth/.gguf copies). */
bool hub_file_wanted(const char *name, qs_hub_fileset set);
/* The shards named by a safetensors index (weight_map values, each once) as a malloc'd array of
 * malloc'd strings. */
int hub_index_shards(const char *index_path, char ***shards, int *n, qs_err *err);
/* For a snapshot folder: the first file the set needs that is missing, or "" when complete. */
int hub_snapshot_missing(const char *snapshot, qs_hub_fileset set, char *missing, size_t cap, qs_err *err);

/* --- hub_sha256.c --- */
typedef struct hub_sha256 hub_sha256;
hub_sha256 *hub_sha256_new(void);
void hub_sha256_update(hub_sha256 *h, const void *data, size_t len);
void hub_sha256_hex(hub_sha256 *h, char out[65]); /* finishes; h may be reset and reused */
void hub_sha256_reset(hub_sha256 *h);
void hub_sha256_free(hub_sha256 *h);
/* Hashes the first `len` bytes of an open file into h. */
int hub_sha256_file_prefix(hub_sha256 *h, const char *path, long long len, qs_err *err);

/* --- hub_progress.c --- */
typedef struct hub_progress {
    pthread_mutex_t mu;
    bool tty, quiet, printed;
    int files_total, files_done;
    long long bytes_total, bytes_done, bytes_at_start;
    double start, last_print;
} hub_progress;
void hub_progress_init(hub_progress *p, int files_total, bool quiet);
void hub_progress_add_total(hub_progress *p, long long bytes);
void hub_progress_add_done(hub_progress *p, long long bytes);
void hub_progress_file_done(hub_progress *p, const char *file, long long size);
void hub_progress_finish(hub_progress *p, const char *repo_id, const char *snapshot);
void hub_progress_abort(hub_progress *p); /* after a failure: ends a line redrawn in place */
void hub_progress_destroy(hub_progress *p);

/* --- hub_http.c --- */
typedef struct hub_response {
    long status;
    char commit[128];        /* X-Repo-Commit */
    char etag[192];          /* ETag */
    char linked_etag[192];   /* X-Linked-Etag (LFS: the sha256) */
    long long linked_size;   /* X-Linked-Size, -1 if absent */
    long long content_length; /* Content-Length, -1 if absent */
    char location[HUB_URL_MAX];
    char error_code[64];     /* X-Error-Code */
    char error_message[256]; /* X-Error-Message */
    char *body;              /* GET only, malloc'd */
    size_t body_len;
} hub_response;
/* What a request is about, for error messages. */
typedef struct hub_what {
    const char *repo_id, *revision, *file; /* file may be NULL */
} hub_what;
void hub_response_free(hub_response *r);
/* GET url into r->body. -1 only when the endpoint cannot be reached (err names it). */
int hub_http_get(const char *url, const char *token, hub_response *r, qs_err *err);
/* HEAD url without following redirects, except same-host relative ones (renamed repos). */
int hub_http_head(const char *url, const char *token, hub_response *r, qs_err *err);
/* An error naming the cause of a failed status (401/403, 404, ...). Always returns -1. */
int hub_http_status_error(const hub_response *r, const hub_what *w, qs_err *err);
/* Downloads url (redirects followed) from byte `offset` (a Range request when offset > 0); each
 * chunk of a 200/206 answer goes to on_data, and on_data(ctx, NULL, 0) first when a server
 * answers a Range request with the whole file (start over). r gets the final status and headers.
 * Returns 0 (check r->status), -1 when the endpoint cannot be reached or another download set
 * *abort_flag, -2 when on_data failed (non-zero), leaving err to the caller. */
typedef int (*hub_data_cb)(void *ctx, const void *data, size_t len);
int hub_http_download(const char *url, const char *token, long long offset, hub_data_cb on_data, void *ctx,
                      volatile int *abort_flag, hub_response *r, qs_err *err);

/* --- hub_fetch_file.c --- */
typedef struct hub_fetch_ctx {
    const hub_repo_paths *paths;
    const char *repo_id, *revision, *commit, *endpoint, *token;
    hub_progress *progress;
    volatile int *abort_flag;
} hub_fetch_ctx;
/* Makes snapshots/COMMIT/FILE present: HEAD for the ETag, blobs/ETAG downloaded through
 * blobs/ETAG.incomplete (resumed when one is there, sha256-checked for LFS files), then linked. */
int hub_fetch_file(const hub_fetch_ctx *c, const char *file, qs_err *err);

/* --- hub_snapshot.c --- */
/* Online: the revision's file list from the model-info API, the wanted files fetched in
 * parallel, refs/REVISION written. Fills commit. */
int hub_snapshot_fetch(const hub_repo_paths *p, const char *repo_id, const qs_hub_options *opt, char *commit,
                       size_t commit_cap, qs_err *err);

#endif
