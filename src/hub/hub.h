/* hub.h — turning a model name as vLLM users type it into a local folder: an existing folder is
 * used as is; otherwise ORG/NAME is a Hugging Face repo id, looked up in the hub cache (the layout
 * huggingface_hub reads and writes: models--ORG--NAME/{refs,blobs,snapshots}) and, unless offline,
 * completed from $HF_ENDPOINT with libcurl. Every command that takes a model goes through here. */
#ifndef QS_HUB_HUB_H
#define QS_HUB_HUB_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

/* Which files of a repo a command reads (and so downloads). */
typedef enum {
    QS_HUB_FILES_MODEL,     /* configs, tokenizer, chat template, safetensors index and shards */
    QS_HUB_FILES_TOKENIZER, /* configs, tokenizer and chat template files only */
} qs_hub_fileset;

typedef struct qs_hub_options {
    const char *revision;  /* branch, tag or commit; NULL or "" = "main" */
    const char *cache_dir; /* --download-dir: the cache root; NULL or "" = the default cache */
    bool offline;          /* --offline; HF_HUB_OFFLINE=1 turns it on as well */
    const char *offline_why; /* what set offline, for errors; NULL = "offline mode (--offline)" */
    qs_hub_fileset files;
    int max_workers;       /* parallel downloads; 0 = 8 */
    bool quiet;            /* no progress output */
} qs_hub_options;

/* A folder name (existing directory) is copied to out as is; a hub repo id is resolved to its
 * snapshot folder in the cache, downloading what is missing unless offline. Errors name the
 * repo, revision and file, and the cause (auth, not found, unreachable, disk, checksum). */
int qs_hub_resolve(const char *name, const qs_hub_options *opt, char *out, size_t cap, qs_err *err);

/* `qserve download`: like qs_hub_resolve, but name must be a repo id (a folder is an error). */
int qs_hub_download(const char *repo_id, const qs_hub_options *opt, char *out, size_t cap, qs_err *err);

/* The cache root in use: opt->cache_dir, else $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME/hub,
 * $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub (huggingface_hub's order). */
int qs_hub_cache_root(const char *cache_dir, char *out, size_t cap, qs_err *err);

/* True when HF_HUB_OFFLINE is 1/true/yes/on (any case). */
bool qs_hub_offline_env(void);

#endif
