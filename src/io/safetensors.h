/* safetensors.h — read-only, mmapped access to safetensors checkpoints (one file or sharded via
 * model.safetensors.index.json). Every header is validated in full before any tensor is used:
 * see ../shared/reference/checkpoint-formats.md §1. Errors name the file and the tensor. */
#ifndef QS_IO_SAFETENSORS_H
#define QS_IO_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qs_safetensors_file qs_safetensors_file;
typedef struct qs_checkpoint qs_checkpoint;

/* Parses and validates a header held in memory (the whole file: 8-byte length, JSON, data).
 * `fname` is used in messages. On success fills *out (free with qs_safetensors_close). Used by
 * the file loader and by the fuzz target. The buffer must outlive the result. */
int qs_safetensors_parse(const uint8_t *buf, size_t len, const char *fname, qs_safetensors_file **out, qs_err *err);
/* mmaps and validates one .safetensors file. */
int qs_safetensors_open(const char *path, qs_safetensors_file **out, qs_err *err);
void qs_safetensors_close(qs_safetensors_file *f);
size_t qs_safetensors_count(const qs_safetensors_file *f);
const qs_tensor *qs_safetensors_tensor(const qs_safetensors_file *f, size_t i);
/* __metadata__ value for key, or NULL. */
const char *qs_safetensors_metadata(const qs_safetensors_file *f, const char *key);
/* Validates one file's header read with pread, without mapping its data: tensor data is NULL. */
int qs_safetensors_open_headers(const char *path, qs_safetensors_file **out, qs_err *err);
/* Tensor by name (hash lookup), or NULL. Tensors are listed in data-offset order. */
const qs_tensor *qs_safetensors_find(const qs_safetensors_file *f, const char *name);
/* The path given to open (or the fname given to parse). */
const char *qs_safetensors_path(const qs_safetensors_file *f);
/* __metadata__ entries in header order: 0 with key and value set, or -1 past the end. */
size_t qs_safetensors_metadata_count(const qs_safetensors_file *f);
int qs_safetensors_metadata_at(const qs_safetensors_file *f, size_t i, const char **key, const char **value);

/* Opens every safetensors file of a model directory: model.safetensors, or the shards listed by
 * model.safetensors.index.json (a missing shard, or a tensor the index names but no shard holds,
 * is an error naming both). headers_only=true validates headers without keeping data mapped
 * beyond the header (for `qserve backends`); tensor data pointers are then NULL. */
int qs_checkpoint_open(const char *model_dir, bool headers_only, qs_checkpoint **out, qs_err *err);
/* For the model loader: as qs_checkpoint_open(dir, false), but data bytes that no tensor claims
 * are recorded (qs_checkpoint_gap) instead of refused, so that a tensor dropped from a header is
 * reported by the name the loader expects rather than as the next tensor's gap; the loader then
 * refuses a checkpoint that still has a gap once everything it needs was found. */
int qs_checkpoint_open_for_model(const char *model_dir, qs_checkpoint **out, qs_err *err);
/* The first unclaimed data range ("FILE: bytes [a, b) ... belong to no tensor"), or NULL. */
const char *qs_checkpoint_gap(const qs_checkpoint *ck);
void qs_checkpoint_close(qs_checkpoint *ck);
const qs_tensor *qs_checkpoint_find(const qs_checkpoint *ck, const char *name);
size_t qs_checkpoint_count(const qs_checkpoint *ck);
const qs_tensor *qs_checkpoint_tensor(const qs_checkpoint *ck, size_t i);
/* The files of the checkpoint (1 for model.safetensors, else the shards in name order); tensors
 * are listed shard by shard in data-offset order. */
size_t qs_checkpoint_file_count(const qs_checkpoint *ck);
const qs_safetensors_file *qs_checkpoint_file(const qs_checkpoint *ck, size_t i);
const char *qs_checkpoint_dir(const qs_checkpoint *ck);

#ifdef __cplusplus
}
#endif

#endif
