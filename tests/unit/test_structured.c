/* test_structured.c — the constraint engine (src/structured): each compiler against a reference
 * (PCRE2 for regexes, arithmetic for integer ranges, cJSON plus a small schema check for JSON
 * Schema), on hand-picked strings both ways and on fresh random strings; the token mask against
 * accept_token over a synthetic vocabulary (every allowed token is accepted, every refused one
 * is refused, EOS only where complete); random walks through the mask always end in a valid
 * output; and unsupported constructs are errors naming them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <cjson/cJSON.h>
#include <pcre2.h>

#include "structured/structured.h"

static uint64_t rng_state = 0x1234567;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static qs_grammar *compile(qs_so_kind kind, const char *text)
{
    qs_err err = {{0}};
    qs_grammar *g = qs_grammar_compile(kind, text, text ? strlen(text) : 0, NULL, &err);
    if (!g)
        fail_msg("compile failed: %s: %s", text ? text : "(null)", err.msg);
    return g;
}

static bool matches(qs_grammar *g, const char *s) { return qs_grammar_matches(g, s, strlen(s)); }

/* ---------------- regex vs PCRE2 ---------------- */

static bool pcre_full(pcre2_code *re, const char *s, size_t n)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

static void regex_vs_pcre2(void **state)
{
    static const char *const patterns[] = {
        "a+b*", "(ab|cd)*e?", "[a-c]{2,4}", "x(?:y|z){3}", "\\d{1,3}-\\d+", "[^ab]c", "(a|ab)(c|bcd)", "\\w+@\\w+",
        "a{2,}b{0,1}", "[ab]*a[ab]{2}", "(a*)*b", ".c.", "[-a]+", "\\.|\\?", "(?P<x>ab)+", "a?a?a?aaa",
    };
    const char alphabet[] = "abcdexyz0123-@.? \n";
    for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++) {
        qs_grammar *g = compile(QS_SO_REGEX, patterns[p]);
        char anchored[256];
        snprintf(anchored, sizeof anchored, "^(?:%s)$", patterns[p]);
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)anchored, PCRE2_ZERO_TERMINATED, PCRE2_DOLLAR_ENDONLY, &ec, &eo, NULL);
        assert_non_null(re);
        int accepted = 0;
        for (int t = 0; t < 3000; t++) {
            char s[16];
            int n = (int)(rnd() % 9);
            for (int i = 0; i < n; i++)
                s[i] = alphabet[rnd() % (sizeof alphabet - 1)];
            s[n] = 0;
            bool want = pcre_full(re, s, (size_t)n);
            bool got = qs_grammar_matches(g, s, (size_t)n);
            if (want != got)
                fail_msg("pattern %s on \"%s\": pcre2 %d, ours %d", patterns[p], s, want, got);
            accepted += got;
        }
        pcre2_code_free(re);
        qs_grammar_release(g);
    }
}

static void regex_unicode_and_classes(void **state)
{
    qs_grammar *g = compile(QS_SO_REGEX, "[α-ω]+ é\\u00e8 .");
    assert_true(matches(g, "αβγ éè x"));
    assert_true(matches(g, "ω éè 日"));
    assert_false(matches(g, "a éè x"));
    assert_false(matches(g, "αβγ éè \n"));
    qs_grammar_release(g);
    g = compile(QS_SO_REGEX, "^[^\\d\\s]{2}\\S$");
    assert_true(matches(g, "ab!"));
    assert_true(matches(g, "日本x"));
    assert_false(matches(g, "a1!"));
    assert_false(matches(g, "ab "));
    qs_grammar_release(g);
}

static void expect_error(qs_so_kind kind, const char *text, const char *needle)
{
    qs_err err = {{0}};
    qs_grammar *g = qs_grammar_compile(kind, text, strlen(text), NULL, &err);
    if (g)
        fail_msg("expected an error for %s", text);
    if (!strstr(err.msg, needle))
        fail_msg("error for %s is \"%s\", expected it to mention \"%s\"", text, err.msg, needle);
}

static void errors_name_the_construct(void **state)
{
    expect_error(QS_SO_REGEX, "a(?=b)", "lookahead");
    expect_error(QS_SO_REGEX, "(a)\\1", "\\1");
    expect_error(QS_SO_REGEX, "a\\bc", "\\b");
    expect_error(QS_SO_REGEX, "a(b", "')'");
    expect_error(QS_SO_REGEX, "*a", "nothing to repeat");
    expect_error(QS_SO_JSON_SCHEMA, "{\"type\":\"object\",\"patternProperties\":{}}", "patternProperties");
    expect_error(QS_SO_JSON_SCHEMA, "{\"type\":\"string\",\"format\":\"hostname\"}", "hostname");
    expect_error(QS_SO_JSON_SCHEMA, "{\"type\":\"number\",\"minimum\":1}", "minimum");
    expect_error(QS_SO_JSON_SCHEMA, "{\"not\":{}}", "'not'");
    expect_error(QS_SO_JSON_SCHEMA, "{\"$ref\":\"#/$defs/missing\"}", "missing");
    expect_error(QS_SO_JSON_SCHEMA, "{\"type\":\"array\",\"uniqueItems\":true}", "uniqueItems");
    expect_error(QS_SO_JSON_SCHEMA, "{\"type\":\"strang\"}", "strang");
    expect_error(QS_SO_JSON_SCHEMA, "{not json", "not valid JSON");
    expect_error(QS_SO_GBNF, "root ::= foo", "foo");
    expect_error(QS_SO_GBNF, "root ::= root \"a\" | \"b\"", "left-recursive");
    expect_error(QS_SO_GBNF, "root ::= <[123]>", "token references");
    expect_error(QS_SO_GBNF, "start ::= \"a\"", "root");
}

/* ---------------- integer ranges vs arithmetic ---------------- */

static void integer_ranges(void **state)
{
    static const long long bounds[][2] = {{0, 0}, {1, 9}, {7, 123}, {-45, 3}, {-1000, -17}, {99, 1000}, {0, 99999}};
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        char schema[160];
        snprintf(schema, sizeof schema, "{\"type\":\"integer\",\"minimum\":%lld,\"maximum\":%lld}", bounds[b][0], bounds[b][1]);
        qs_grammar *g = compile(QS_SO_JSON_SCHEMA, schema);
        for (long long v = bounds[b][0] - 300; v <= bounds[b][1] + 300; v++) {
            char s[32];
            snprintf(s, sizeof s, "%lld", v);
            bool want = v >= bounds[b][0] && v <= bounds[b][1];
            if (matches(g, s) != want)
                fail_msg("%s on %s: want %d", schema, s, want);
        }
        for (int t = 0; t < 2000; t++) {
            long long v = (long long)(rnd() % 2000000) - 1000000;
            char s[32];
            snprintf(s, sizeof s, "%lld", v);
            assert_int_equal(matches(g, s), v >= bounds[b][0] && v <= bounds[b][1]);
        }
        assert_false(matches(g, "01"));
        assert_false(matches(g, "-0"));
        qs_grammar_release(g);
    }
    qs_grammar *g = compile(QS_SO_JSON_SCHEMA, "{\"type\":\"integer\",\"exclusiveMinimum\":10}");
    assert_false(matches(g, "10"));
    assert_true(matches(g, "11"));
    assert_true(matches(g, "123456789012345"));
    assert_false(matches(g, "1234567890123456")); /* more than 15 digits */
    qs_grammar_release(g);
}

/* ---------------- JSON Schema ---------------- */

typedef struct jcase {
    const char *schema;
    const char *const accept[6];
    const char *const reject[6];
} jcase;

static void json_schema_cases(void **state)
{
    static const jcase cases[] = {
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},\"required\":[\"a\"]}",
         {"{\"a\":1}", "{\"a\": -5, \"b\": \"x\"}", "{ \"a\":0 ,\"b\":\"\\u00e9\\n\" }", "{\n  \"a\": 12\n}"},
         {"{}", "{\"b\":\"x\"}", "{\"a\":1,\"c\":2}", "{\"a\":1.5}", "{\"b\":\"x\",\"a\":1}", "{\"a\":1}   "}},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"}},\"additionalProperties\":true}",
         {"{}", "{\"a\":true}", "{\"a\":false,\"zz\":[1,{\"q\":null}]}", "{\"x\":\"y\"}"},
         {"[]", "{\"a\":true,}"}},
        {"{\"type\":\"array\",\"items\":{\"enum\":[\"x\",2,null]},\"minItems\":1,\"maxItems\":3}",
         {"[\"x\"]", "[2, null]", "[null,null,\"x\"]"}, {"[]", "[1]", "[2,2,2,2]", "[\"y\"]"}},
        {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}],\"items\":false}",
         {"[]", "[1]", "[1,\"a\"]"}, {"[1,\"a\",2]", "[\"a\"]"}},
        {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", {"\"ab\"", "\"abc\"", "\"\\n\\t\"", "\"日本\""},
         {"\"a\"", "\"abcd\"", "ab"}},
        {"{\"type\":\"string\",\"pattern\":\"^[a-z]+-[0-9]{2}$\"}", {"\"ab-12\""}, {"\"ab-1\"", "\"Ab-12\""}},
        {"{\"type\":\"string\",\"format\":\"date\"}", {"\"2024-02-29\""}, {"\"2024-13-01\"", "\"24-01-01\""}},
        {"{\"type\":\"string\",\"format\":\"uuid\"}", {"\"123e4567-e89b-12d3-a456-426614174000\""}, {"\"123e4567\""}},
        {"{\"type\":\"string\",\"format\":\"email\"}", {"\"a.b@c.org\""}, {"\"a@b\"", "\"@b.c\""}},
        {"{\"type\":\"string\",\"format\":\"date-time\"}", {"\"2024-01-02T03:04:05Z\"", "\"2024-01-02T03:04:05.5+01:00\""},
         {"\"2024-01-02 03:04:05\""}},
        {"{\"type\":\"string\",\"format\":\"time\"}", {"\"23:59:59Z\""}, {"\"24:00:00Z\""}},
        {"{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}", {"3", "null"}, {"\"3\"", "3.5"}},
        {"{\"oneOf\":[{\"const\":{\"k\":[1,2]}},{\"type\":\"boolean\"}]}", {"{\"k\":[1,2]}", "true"}, {"{\"k\":[1]}"}},
        {"{\"type\":[\"number\",\"string\"]}", {"1.5e3", "-0.25", "\"s\""}, {"true", "01", "1."}},
        {"{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]},"
         "{\"properties\":{\"b\":{\"type\":\"null\"}},\"required\":[\"b\"]}]}",
         {"{\"a\":1,\"b\":null}"}, {"{\"a\":1}", "{\"b\":null}"}},
        {"{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"next\":{\"anyOf\":[{\"$ref\":"
         "\"#/$defs/node\"},{\"type\":\"null\"}]}},\"required\":[\"v\",\"next\"]}},\"$ref\":\"#/$defs/node\"}",
         {"{\"v\":1,\"next\":null}", "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":3,\"next\":null}}}"},
         {"{\"v\":1}", "{\"v\":1,\"next\":{\"v\":2}}"}},
        {"{\"title\":\"t\",\"description\":\"d\",\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\",\"description\":\"q\"}},"
         "\"required\":[\"x\"],\"additionalProperties\":false}",
         {"{\"x\":\"\"}"}, {"{\"x\":\"\",\"y\":1}"}},
        {"{}", {"1", "\"s\"", "[{}]", "{\"a\":[true,false,null]}"}, {"", "tru", "{a:1}"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        qs_grammar *g = compile(QS_SO_JSON_SCHEMA, cases[c].schema);
        for (int i = 0; i < 6 && cases[c].accept[i]; i++)
            if (!matches(g, cases[c].accept[i]))
                fail_msg("schema %s should accept %s", cases[c].schema, cases[c].accept[i]);
        for (int i = 0; i < 6 && cases[c].reject[i]; i++)
            if (matches(g, cases[c].reject[i]))
                fail_msg("schema %s should reject %s", cases[c].schema, cases[c].reject[i]);
        qs_grammar_release(g);
    }
}

static void json_object_and_whitespace(void **state)
{
    qs_grammar *g = compile(QS_SO_JSON_OBJECT, NULL);
    assert_true(matches(g, "{}"));
    assert_true(matches(g, "{\"a\": [1, 2.5, \"x\", {\"b\": null}]}"));
    assert_false(matches(g, "[]"));
    assert_false(matches(g, "{\"a\":     1}")); /* five spaces: over the bound */
    assert_false(matches(g, "{\"a\":1,}"));
    qs_grammar_release(g);
    qs_so_options opt = {.whitespace_pattern = ""};
    qs_err err;
    g = qs_grammar_compile(QS_SO_JSON_OBJECT, NULL, 0, &opt, &err);
    assert_non_null(g);
    assert_true(matches(g, "{\"a\":1}"));
    assert_false(matches(g, "{\"a\": 1}"));
    qs_grammar_release(g);
}

/* ---------------- GBNF and choices ---------------- */

static void gbnf_grammars(void **state)
{
    const char *arith = "# arithmetic\n"
                        "root ::= expr\n"
                        "expr ::= term ([-+*/] term)*\n"
                        "term ::= num | \"(\" ws expr ws \")\"\n"
                        "num  ::= [0-9]+\n"
                        "ws   ::= [ \\t]{0,2}\n";
    qs_grammar *g = compile(QS_SO_GBNF, arith);
    assert_true(matches(g, "1+2*(3-4)"));
    assert_true(matches(g, "(( 7 ))"));
    assert_false(matches(g, "1+"));
    assert_false(matches(g, "(1"));
    qs_grammar_release(g);
    g = compile(QS_SO_GBNF, "root ::= (\"yes\" | \"no\")\n  | \"maybe\" [.!]?\nother ::= \"x\"{2,3}");
    assert_true(matches(g, "yes"));
    assert_true(matches(g, "maybe!"));
    assert_false(matches(g, "maybe!!"));
    qs_grammar_release(g);
    g = compile(QS_SO_GBNF, "root ::= [^\\n]{1,3} \"\\n\" .\n");
    assert_true(matches(g, "日x\nz"));
    assert_false(matches(g, "\n\nz"));
    qs_grammar_release(g);

    const char *choices[] = {"red", "green", "blue", "re"};
    qs_err err;
    g = qs_grammar_from_choices(choices, 4, NULL, &err);
    assert_non_null(g);
    assert_true(matches(g, "re"));
    assert_true(matches(g, "red"));
    assert_false(matches(g, "r"));
    assert_false(matches(g, "redd"));
    qs_grammar_release(g);
}

/* ---------------- masks over a synthetic vocabulary ---------------- */

typedef struct vocab {
    int n;
    uint8_t **bytes;
    int *lens;
    int32_t eos;
} vocab;

static vocab make_vocab(int n_multi)
{
    vocab v = {0};
    v.n = 256 + n_multi + 2;
    v.bytes = calloc((size_t)v.n, sizeof *v.bytes);
    v.lens = calloc((size_t)v.n, sizeof *v.lens);
    for (int i = 0; i < 256; i++) {
        v.bytes[i] = malloc(1);
        v.bytes[i][0] = (uint8_t)i;
        v.lens[i] = 1;
    }
    const char *pieces[] = {"\"", "{", "}", "[", "]", ",", ":", " ", "\n", "a", "b", "1", "0", "-", ".", "true", "null",
                            "e", "\\", "x", "\xc3\xa9", "\xe6\x97\xa5"};
    int np = sizeof pieces / sizeof pieces[0];
    for (int i = 0; i < n_multi; i++) {
        char buf[64] = {0};
        int parts = 2 + (int)(rnd() % 4);
        for (int k = 0; k < parts; k++)
            strcat(buf, pieces[rnd() % (unsigned)np]);
        v.lens[256 + i] = (int)strlen(buf);
        v.bytes[256 + i] = (uint8_t *)strdup(buf);
    }
    v.lens[v.n - 2] = 0; /* a special token: no bytes */
    v.eos = v.n - 1;     /* EOS: no bytes either */
    return v;
}

static void free_vocab(vocab *v)
{
    for (int i = 0; i < v->n; i++)
        free(v->bytes[i]);
    free(v->bytes);
    free(v->lens);
}

/* Walks the mask with random picks; checks the mask against accept_token on the way. Returns
 * the output (malloc'd) once EOS is picked, or NULL if it ran past max_steps. */
static char *random_walk(qs_grammar *g, const qs_vocab_trie *t, const vocab *v, int max_steps, bool check)
{
    qs_matcher *m = qs_matcher_new(g, t);
    assert_non_null(m);
    size_t words = qs_mask_words(t);
    uint32_t *mask = malloc(words * 4);
    char *out = calloc(1, 1);
    size_t len = 0;
    for (int step = 0; step < max_steps; step++) {
        int allowed = qs_matcher_fill_mask(m, mask);
        assert_true(allowed > 0);
        bool eos_ok = mask[v->eos >> 5] >> (v->eos & 31) & 1;
        assert_int_equal(eos_ok, qs_matcher_is_complete(m));
        int32_t *ids = malloc(sizeof *ids * (size_t)allowed);
        int k = 0;
        for (int i = 0; i < v->n; i++)
            if (mask[i >> 5] >> (i & 31) & 1)
                ids[k++] = i;
        assert_int_equal(k, allowed);
        if (check) { /* refused tokens must be refused by accept_token (a sample of them) */
            for (int s = 0; s < 40; s++) {
                int32_t id = (int32_t)(rnd() % (unsigned)v->n);
                if (mask[id >> 5] >> (id & 31) & 1)
                    continue;
                assert_false(qs_matcher_accept_token(m, id)); /* and leave the state as it was */
            }
        }
        /* prefer ending sometimes so outputs stay short */
        int32_t pick = eos_ok && rnd() % 4 == 0 ? v->eos : ids[rnd() % (unsigned)k];
        free(ids);
        if (!qs_matcher_accept_token(m, pick))
            fail_msg("token %d was in the mask but accept_token refused it", pick);
        if (pick == v->eos) {
            assert_true(qs_matcher_ended(m));
            free(mask);
            qs_matcher_free(m);
            return out;
        }
        out = realloc(out, len + (size_t)v->lens[pick] + 1);
        memcpy(out + len, v->bytes[pick], (size_t)v->lens[pick]);
        len += (size_t)v->lens[pick];
        out[len] = 0;
    }
    free(mask);
    qs_matcher_free(m);
    free(out);
    return NULL;
}

/* A small check of the supported schema subset, as the reference for generated outputs. */
static bool valid(const cJSON *v, const cJSON *s)
{
    const cJSON *type = cJSON_GetObjectItem(s, "type");
    const cJSON *en = cJSON_GetObjectItem(s, "enum");
    if (en) {
        const cJSON *e;
        cJSON_ArrayForEach(e, en) if (cJSON_Compare(e, v, true)) return true;
        return false;
    }
    if (type && cJSON_IsString(type)) {
        const char *t = type->valuestring;
        if (!strcmp(t, "integer")) {
            if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long long)v->valuedouble)
                return false;
            const cJSON *mn = cJSON_GetObjectItem(s, "minimum"), *mx = cJSON_GetObjectItem(s, "maximum");
            return (!mn || v->valuedouble >= mn->valuedouble) && (!mx || v->valuedouble <= mx->valuedouble);
        }
        if (!strcmp(t, "number"))
            return cJSON_IsNumber(v);
        if (!strcmp(t, "boolean"))
            return cJSON_IsBool(v);
        if (!strcmp(t, "string")) {
            if (!cJSON_IsString(v))
                return false;
            const cJSON *mx = cJSON_GetObjectItem(s, "maxLength");
            size_t chars = 0;
            for (const char *p = v->valuestring; *p; p++)
                chars += ((unsigned char)*p & 0xC0) != 0x80;
            return !mx || chars <= (size_t)mx->valueint;
        }
        if (!strcmp(t, "array")) {
            if (!cJSON_IsArray(v))
                return false;
            const cJSON *items = cJSON_GetObjectItem(s, "items"), *e;
            const cJSON *mx = cJSON_GetObjectItem(s, "maxItems"), *mn = cJSON_GetObjectItem(s, "minItems");
            int n = cJSON_GetArraySize(v);
            if ((mx && n > mx->valueint) || (mn && n < mn->valueint))
                return false;
            cJSON_ArrayForEach(e, v) if (items && !valid(e, items)) return false;
            return true;
        }
        if (!strcmp(t, "object")) {
            if (!cJSON_IsObject(v))
                return false;
            const cJSON *props = cJSON_GetObjectItem(s, "properties"), *req = cJSON_GetObjectItem(s, "required"), *e;
            cJSON_ArrayForEach(e, req) if (!cJSON_GetObjectItem(v, e->valuestring)) return false;
            cJSON_ArrayForEach(e, v)
            {
                const cJSON *ps = cJSON_GetObjectItem(props, e->string);
                if (!ps || !valid(e, ps))
                    return false;
            }
            return true;
        }
    }
    return true;
}

static void mask_random_walks(void **state)
{
    vocab v = make_vocab(3000);
    qs_err err;
    qs_vocab_trie *t = qs_vocab_trie_new(v.n, (const uint8_t *const *)v.bytes, v.lens, &v.eos, 1, &err);
    assert_non_null(t);
    static const char *const schemas[] = {
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":6},\"age\":{\"type\":\"integer\","
        "\"minimum\":0,\"maximum\":150},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\",1]},\"maxItems\":3},"
        "\"ok\":{\"type\":\"boolean\"}},\"required\":[\"name\",\"age\"]}",
        "{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":1,\"maxItems\":4}",
        "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"object\",\"properties\":{\"y\":{\"type\":\"string\",\"maxLength\":3}},"
        "\"required\":[\"y\"]}},\"required\":[\"x\"]}",
    };
    for (size_t s = 0; s < sizeof schemas / sizeof schemas[0]; s++) {
        qs_grammar *g = compile(QS_SO_JSON_SCHEMA, schemas[s]);
        cJSON *schema = cJSON_Parse(schemas[s]);
        int done = 0;
        for (int walk = 0; walk < 60; walk++) {
            char *out = random_walk(g, t, &v, 400, walk < 10);
            if (!out)
                continue;
            done++;
            cJSON *val = cJSON_Parse(out);
            if (!val || !valid(val, schema))
                fail_msg("schema %zu produced an invalid output: %s", s, out);
            assert_true(matches(g, out));
            cJSON_Delete(val);
            free(out);
        }
        assert_true(done > 30);
        cJSON_Delete(schema);
        qs_grammar_release(g);
    }
    /* regexes and choices through the mask, checked by PCRE2 */
    static const char *const res[] = {"[a-b]{1,5}(x|1-0)?", "(\"[ab]*\"|null)", "-?[0-9]+\\.[0-9]"};
    for (size_t r = 0; r < sizeof res / sizeof res[0]; r++) {
        qs_grammar *g = compile(QS_SO_REGEX, res[r]);
        char anchored[128];
        snprintf(anchored, sizeof anchored, "^(?:%s)$", res[r]);
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)anchored, PCRE2_ZERO_TERMINATED, PCRE2_DOLLAR_ENDONLY, &ec, &eo, NULL);
        for (int walk = 0; walk < 80; walk++) {
            char *out = random_walk(g, t, &v, 200, walk < 5);
            if (!out)
                continue;
            if (!pcre_full(re, out, strlen(out)))
                fail_msg("regex %s produced %s", res[r], out);
            free(out);
        }
        pcre2_code_free(re);
        qs_grammar_release(g);
    }
    qs_vocab_trie_free(t);
    free_vocab(&v);
}

/* The mask equals "accept_token succeeds" for every token, in many random states. */
static void mask_equals_accept(void **state)
{
    vocab v = make_vocab(1500);
    qs_err err;
    qs_vocab_trie *t = qs_vocab_trie_new(v.n, (const uint8_t *const *)v.bytes, v.lens, &v.eos, 1, &err);
    qs_grammar *g = compile(QS_SO_JSON_OBJECT, NULL);
    uint32_t *mask = malloc(qs_mask_words(t) * 4);
    for (int walk = 0; walk < 8; walk++) {
        qs_matcher *m = qs_matcher_new(g, t);
        for (int step = 0; step < 12; step++) {
            int allowed = qs_matcher_fill_mask(m, mask);
            assert_true(allowed > 0);
            int pick = -1, seen = 0;
            for (int id = 0; id < v.n; id++) {
                bool in = mask[id >> 5] >> (id & 31) & 1;
                if (id == v.eos) {
                    assert_int_equal(in, qs_matcher_is_complete(m));
                    continue;
                }
                if (!in) {
                    assert_false(qs_matcher_accept_token(m, id));
                } else if (rnd() % (unsigned)(++seen) == 0) {
                    pick = id;
                }
            }
            if (pick < 0)
                break;
            assert_true(qs_matcher_accept_token(m, pick));
        }
        qs_matcher_free(m);
    }
    free(mask);
    qs_grammar_release(g);
    qs_vocab_trie_free(t);
    free_vocab(&v);
}

static void prefix_suffix_wrap(void **state)
{
    cJSON *schema = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"n\":{\"const\":\"f\"}},\"required\":[\"n\"]}");
    qs_so_options opt = {.prefix = "<tool_call>\n", .suffix = "\n</tool_call>"};
    qs_err err;
    qs_grammar *g = qs_grammar_from_schema(schema, &opt, &err);
    assert_non_null(g);
    assert_true(matches(g, "<tool_call>\n{\"n\":\"f\"}\n</tool_call>"));
    assert_false(matches(g, "{\"n\":\"f\"}"));
    qs_grammar_release(g);
    cJSON_Delete(schema);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(regex_vs_pcre2),
        cmocka_unit_test(regex_unicode_and_classes),
        cmocka_unit_test(errors_name_the_construct),
        cmocka_unit_test(integer_ranges),
        cmocka_unit_test(json_schema_cases),
        cmocka_unit_test(json_object_and_whitespace),
        cmocka_unit_test(gbnf_grammars),
        cmocka_unit_test(mask_random_walks),
        cmocka_unit_test(mask_equals_accept),
        cmocka_unit_test(prefix_suffix_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
