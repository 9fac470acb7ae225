/* grammar.h — the grammar representation every compiler of structured.h targets, and the
 * builder they use. A grammar is a set of rules; a rule is a list of alternatives; an alternative
 * is a sequence of elements, each a byte class (256-bit set) or a reference to a rule. Finalised,
 * the alternatives are flattened into one element array where each alternative ends with an END
 * element, so a matcher position is one index. Left recursion is refused at finalisation (the
 * matcher expands rules top-down). Private to src/structured. */
#ifndef QS_STRUCTURED_GRAMMAR_H
#define QS_STRUCTURED_GRAMMAR_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "structured/structured.h"

typedef struct qs_byteset {
    uint32_t w[8];
} qs_byteset;

static inline bool qs_byteset_has(const qs_byteset *s, unsigned b) { return (s->w[b >> 5] >> (b & 31)) & 1u; }
static inline void qs_byteset_add(qs_byteset *s, unsigned b) { s->w[b >> 5] |= 1u << (b & 31); }
static inline void qs_byteset_add_range(qs_byteset *s, unsigned lo, unsigned hi)
{
    for (unsigned b = lo; b <= hi; b++)
        qs_byteset_add(s, b);
}

enum { QS_EL_END = 0, QS_EL_BYTES = 1, QS_EL_RULE = 2 };

typedef struct qs_gelem {
    uint32_t kind : 2;
    uint32_t arg : 30; /* byteset index or rule index */
} qs_gelem;

/* A hard bound on compiled size, so a request cannot make the server build a huge grammar. */
#define QS_GRAMMAR_MAX_ELEMS (1 << 21)

/* --- builder --- */
typedef struct qs_gseq {
    qs_gelem *e;
    int n, cap;
} qs_gseq;

typedef struct qs_grule_b {
    qs_gseq *alts;
    int n_alts, cap_alts;
    char *name; /* for messages; may be NULL */
    bool defined;
} qs_grule_b;

typedef struct qs_gbuild {
    qs_grule_b *rules;
    int n_rules, cap_rules;
    qs_byteset *sets;
    int n_sets, cap_sets;
    long total_elems;
    bool oom;
    bool too_big;
} qs_gbuild;

void qs_gb_init(qs_gbuild *b);
void qs_gb_free(qs_gbuild *b);
int qs_gb_rule(qs_gbuild *b, const char *name);           /* a new rule with no alternatives */
void qs_gb_add_alt(qs_gbuild *b, int rule, const qs_gseq *seq); /* copies seq */
void qs_gseq_free(qs_gseq *s);
void qs_gseq_rule(qs_gbuild *b, qs_gseq *s, int rule);
void qs_gseq_set(qs_gbuild *b, qs_gseq *s, const qs_byteset *set);
void qs_gseq_byte(qs_gbuild *b, qs_gseq *s, unsigned byte);
void qs_gseq_lit(qs_gbuild *b, qs_gseq *s, const char *bytes, size_t len);
void qs_gseq_append(qs_gbuild *b, qs_gseq *s, const qs_gseq *t);
/* Rule for a literal. */
int qs_gb_literal(qs_gbuild *b, const char *bytes, size_t len);
/* Rules for repetitions of one element: min..max copies (max < 0: unbounded). */
int qs_gb_repeat(qs_gbuild *b, qs_gelem el, int min, int max);
qs_gelem qs_gel_rule(int rule);

/* Code point ranges (inclusive, sorted or not) to an element matching one UTF-8 encoded code
 * point in (or, negated, outside) them; surrogates are never matched. excluded: bytes removed
 * from single-byte matches (JSON strings drop '"', '\\' and controls). */
typedef struct qs_cprange {
    uint32_t lo, hi;
} qs_cprange;
qs_gelem qs_gb_codepoints(qs_gbuild *b, const qs_cprange *r, int n, bool negated, const qs_byteset *excluded);

/* --- finalised grammar --- */
typedef struct qs_mask_cache qs_mask_cache;

struct qs_grammar {
    int refs;
    pthread_mutex_t ref_mu;
    qs_gelem *elems;
    int n_elems;
    qs_byteset *sets;
    int n_sets;
    int *rule_alts;  /* [n_rules + 1]: alternatives of rule r are alts[rule_alts[r] .. rule_alts[r+1]) */
    int *alts;       /* element index where each alternative starts */
    int n_rules;
    int root;
    /* The matcher's mask cache, attached on first use with its destructor: the grammar frees
     * it without knowing the matcher, which stands above it. */
    qs_mask_cache *cache;
    void (*free_cache)(qs_mask_cache *c);
};

/* Turns the builder into a grammar with start rule root (checks every referenced rule is defined
 * and that no rule is left-recursive). Frees the builder either way. */
qs_grammar *qs_gb_finish(qs_gbuild *b, int root, qs_err *err);
/* Wraps root in the options' prefix / suffix and finishes. */
qs_grammar *qs_gb_finish_opts(qs_gbuild *b, int root, const qs_so_options *opt, qs_err *err);

/* Compilers (each adds rules to b and returns the rule matching the whole input, or -1 with err). */
typedef struct qs_regex_flags {
    bool json_string; /* inside a JSON string: byte classes lose '"', '\\' and bytes < 0x20 */
} qs_regex_flags;
int qs_so_regex_compile(qs_gbuild *b, const char *re, size_t len, const qs_regex_flags *flags, qs_err *err);
int qs_gbnf_compile(qs_gbuild *b, const char *text, size_t len, qs_err *err);
int qs_json_schema_compile(qs_gbuild *b, const cJSON *schema, const char *ws_pattern, qs_err *err);
int qs_json_object_compile(qs_gbuild *b, const char *ws_pattern, qs_err *err);

#endif
