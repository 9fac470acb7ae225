/* jinja_value.h — the engine's value type (Python-like: undefined, none, bool, int, float, str,
 * list/tuple, dict, namespace, macro, builtin, loop), its constructors, conversion from cJSON, and
 * Python's truthiness, equality, ordering, str() and json.dumps; UTF-8 helpers on code points. */
#ifndef QS_JINJA_VALUE_H
#define QS_JINJA_VALUE_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "jinja/jinja_arena.h"
#include "util/error.h"

typedef enum {
    QS_JV_UNDEFINED,
    QS_JV_NONE,
    QS_JV_BOOL,
    QS_JV_INT,
    QS_JV_FLOAT,
    QS_JV_STRING,
    QS_JV_LIST, /* also tuples (is_tuple) */
    QS_JV_DICT,
    QS_JV_NAMESPACE, /* namespace(): a dict whose attributes `set ns.x = ...` may change */
    QS_JV_MACRO,
    QS_JV_BUILTIN, /* a global function: range, namespace, raise_exception, strftime_now, dict */
    QS_JV_LOOP,    /* a for loop's `loop`: one mutable object per loop, like Jinja's LoopContext */
} qs_jv_kind;

typedef struct qs_jv qs_jv;
typedef struct qs_jj_node qs_jj_node;   /* jinja_parser.h */
typedef struct qs_jj_frame qs_jj_frame; /* jinja_access.h */

typedef struct {
    qs_jv **items;
    size_t len, cap;
    bool is_tuple;
} qs_jv_list;

typedef struct {
    qs_jv **keys, **vals;
    size_t len, cap;
} qs_jv_dict;

typedef struct {
    struct qs_jv *items; /* the (filtered) list being iterated */
    size_t index0;
} qs_jv_loop;

struct qs_jv {
    qs_jv_kind kind;
    union {
        bool b;
        long long i;
        double f;
        struct {
            const char *s;
            size_t len;
        } str;
        qs_jv_list *list;
        qs_jv_dict *dict; /* dicts and namespaces */
        struct {
            const qs_jj_node *node;
            qs_jj_frame *closure;
            const char *name; /* the macro's own name (node->name), for repr without the AST */
        } macro;
        int builtin;
        qs_jv_loop *loop;
        const char *undef_name; /* why it is undefined ("'x' is undefined"), for error messages */
    };
};

qs_jv *qs_jv_undefined(qs_jj_arena *a, const char *name);
qs_jv *qs_jv_none(qs_jj_arena *a);
qs_jv *qs_jv_bool(qs_jj_arena *a, bool b);
qs_jv *qs_jv_int(qs_jj_arena *a, long long i);
qs_jv *qs_jv_float(qs_jj_arena *a, double f);
qs_jv *qs_jv_str(qs_jj_arena *a, const char *s, size_t len); /* copies */
qs_jv *qs_jv_cstr(qs_jj_arena *a, const char *s);
qs_jv *qs_jv_list_new(qs_jj_arena *a, bool is_tuple);
void qs_jv_list_push(qs_jj_arena *a, qs_jv *list, qs_jv *item);
qs_jv *qs_jv_dict_new(qs_jj_arena *a);
void qs_jv_dict_set(qs_jj_arena *a, qs_jv *dict, qs_jv *key, qs_jv *val);
qs_jv *qs_jv_dict_get(const qs_jv *dict, const qs_jv *key);         /* NULL if absent */
qs_jv *qs_jv_dict_get_cstr(const qs_jv *dict, const char *key); /* NULL if absent */
void qs_jv_dict_clear(qs_jv *dict);

qs_jv *qs_jv_from_json(qs_jj_arena *a, const cJSON *j);
bool qs_jv_truthy(const qs_jv *v);
bool qs_jv_equal(const qs_jv *x, const qs_jv *y);
bool qs_jv_is_number(const qs_jv *v); /* bool, int or float, like Python's numbers.Number */
double qs_jv_as_double(const qs_jv *v);
const char *qs_jv_type_name(const qs_jv *v); /* Python's name: 'str', 'int', 'dict', ... */
/* Three-way ordering like Python's <; -1 with err filled when the types don't order. */
int qs_jv_compare(const qs_jv *x, const qs_jv *y, int *out, qs_err *err);

/* Python str(v) appended to b (strings verbatim, None, True, 1.0, ['a'], {'k': 1}). */
void qs_jv_write_str(qs_jj_buf *b, const qs_jv *v);
/* str(v) as a value (returns v itself when it already is a string). */
qs_jv *qs_jv_to_str(qs_jj_arena *a, const qs_jv *v);
/* Python json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys) as HF's tojson
 * does it; indent < 0 means none (", " and ": " separators). */
int qs_jv_write_json(qs_jj_buf *b, const qs_jv *v, int indent, bool sort_keys, qs_err *err);
/* Python repr() of a float: shortest round-trip digits, "1.0", "1e+16", "inf". */
void qs_jj_format_float(qs_jj_buf *b, double f);

/* UTF-8 helpers: code point count, byte offset of code point index (clamped), and whether a
 * code point is whitespace in Python's str.isspace() sense. */
size_t qs_jj_utf8_len(const char *s, size_t n);
size_t qs_jj_utf8_offset(const char *s, size_t n, size_t index);
size_t qs_jj_utf8_decode(const char *s, size_t n, unsigned *cp); /* bytes used, >= 1 */
bool qs_jj_is_space_cp(unsigned cp);

#endif
