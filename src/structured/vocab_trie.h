/* vocab_trie.h — the vocabulary as a byte trie laid out in preorder (private to src/structured):
 * node i has a byte, a depth (1 for children of the root), the index just past its subtree (so a
 * walk skips a refused subtree in one step) and the ids of the tokens that end there. */
#ifndef QS_STRUCTURED_VOCAB_TRIE_H
#define QS_STRUCTURED_VOCAB_TRIE_H

#include <stdint.h>

#include "structured/structured.h"

/* One node, packed so a walk reads one cache line for several nodes. */
typedef struct qs_trie_node {
    int32_t subtree_end;   /* index just past this node's subtree */
    int32_t tok_first;     /* ids of node i are ids[nodes[i].tok_first .. nodes[i+1].tok_first) */
    uint16_t depth;
    uint8_t byte;
} qs_trie_node;

struct qs_vocab_trie {
    int vocab_size;
    int n_nodes;
    int max_depth;
    qs_trie_node *nodes;   /* [n_nodes + 1] (the last one only closes tok_first) */
    int32_t *ids;
    uint8_t *bytes;        /* every token's bytes, back to back */
    int64_t *bytes_off;    /* [vocab_size + 1]: token i is bytes[bytes_off[i] .. bytes_off[i+1]) */
    int32_t *end_ids;
    int n_end;
};

#endif
