/* safetensors_writer.h — writes safetensors files (one model.safetensors, or shards plus
 * model.safetensors.index.json) that qs_safetensors_open reads back and Hugging Face tools accept.
 * Used by `qserve quantize`, `qserve init-model` and the converters.
 *
 * Tensors are added by reference: the data pointer must stay valid until the last write call
 * (qs_st_writer_add_copy copies instead, for small temporaries). Writing streams each tensor from
 * its own buffer with large write() calls, so multi-GB checkpoints cost no extra copy. */
#ifndef QS_IO_SAFETENSORS_WRITER_H
#define QS_IO_SAFETENSORS_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "io/safetensors.h"
#include "util/error.h"

typedef struct qs_st_writer qs_st_writer;

qs_st_writer *qs_st_writer_new(void);   /* NULL when out of memory */
void qs_st_writer_free(qs_st_writer *w);

/* Adds a tensor. name: non-empty UTF-8, unique, not "__metadata__"; ndim 0..QS_MAX_DIMS (0 is a
 * scalar); nbytes must equal numel * bits / 8. data is referenced, not copied. */
int qs_st_writer_add(qs_st_writer *w, const char *name, qs_dtype dtype, int ndim, const int64_t *shape,
                     const void *data, size_t nbytes, qs_err *err);
/* Same, but copies the data now (the caller may free it at once). */
int qs_st_writer_add_copy(qs_st_writer *w, const char *name, qs_dtype dtype, int ndim, const int64_t *shape,
                          const void *data, size_t nbytes, qs_err *err);
/* Sets (or replaces) a "__metadata__" entry, written into every file. -1 if key or value is not
 * valid UTF-8 or memory runs out. */
int qs_st_writer_set_metadata(qs_st_writer *w, const char *key, const char *value);

size_t qs_st_writer_count(const qs_st_writer *w);
uint64_t qs_st_writer_total_bytes(const qs_st_writer *w);   /* sum of tensor sizes */

/* Writes one file at path (through path.tmp, renamed when complete). The header is padded with
 * spaces to a multiple of 8 bytes, and tensors are ordered by descending element size (insertion
 * order otherwise), so every tensor starts aligned to its element size. */
int qs_st_writer_write(qs_st_writer *w, const char *path, qs_err *err);

/* Writes the tensors into folder dir (created if missing): a single dir/model.safetensors when
 * they fit in max_shard_bytes (0 = no limit), else model-0000N-of-0000M.safetensors shards of at
 * most max_shard_bytes of tensor data each (a larger tensor gets a shard of its own; tensors are
 * split in insertion order) plus model.safetensors.index.json. A stale model.safetensors or index
 * from an earlier write of the other kind is removed, since a reader would prefer it. */
int qs_st_writer_write_sharded(qs_st_writer *w, const char *dir, size_t max_shard_bytes, qs_err *err);

#endif
