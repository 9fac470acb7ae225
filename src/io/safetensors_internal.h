/* safetensors_internal.h — pieces shared by the safetensors reader and writer but not part of the
 * public API: a name -> tensor hash table (checkpoints hold tens of thousands of tensors, so
 * lookups and duplicate checks must not be linear), the header dtype list for messages, JSON
 * string escaping for the writer and error messages. */
#ifndef QS_IO_SAFETENSORS_INTERNAL_H
#define QS_IO_SAFETENSORS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

/* Open addressing, linear probing, load factor <= 1/2. Slots point at tensors owned elsewhere. */
typedef struct qs_name_index {
    const qs_tensor **slots;
    size_t cap; /* power of two, 0 when empty */
    size_t n;
} qs_name_index;

/* Sizes the table for up to `n` names; 0 or -1 (out of memory). */
int qs_name_index_init(qs_name_index *ix, size_t n);
void qs_name_index_free(qs_name_index *ix);
/* Inserts t under t->name. Returns NULL when inserted, or the tensor already holding that name
 * (nothing inserted). The table must have been sized for every insertion. */
const qs_tensor *qs_name_index_insert(qs_name_index *ix, const qs_tensor *t);
const qs_tensor *qs_name_index_find(const qs_name_index *ix, const char *name);

/* Writes s as printable text into buf (cap bytes): bytes outside printable ASCII become \xNN and
 * anything longer than about 120 bytes is cut with "...". For names in error messages. */
const char *qs_printable(char *buf, size_t cap, const char *s, size_t len);

#endif
