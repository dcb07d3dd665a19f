/*
 * probegate check plugins in C (ABI v2, plugins/ABI.md).
 *
 * Build (one header, one source, no libc):
 *   clang --target=wasm32 -nostdlib -Os -I SDK -Wl,--no-entry -Wl,--strip-all \
 *         -o build/NAME.wasm check.c SDK/probegate.c
 *
 * A plugin defines two functions; probegate.c exports the ABI around them:
 *
 *   pg_manifest_builder *probegate_manifest(void);
 *   pg_verdict *probegate_check(const pg_input *input);
 *
 * Memory: everything comes from one arena that the host resets after copying
 * each result (pg_reset), so nothing is freed by hand and nothing may be kept
 * across calls. Strings are pg_str slices (pointer + length, not
 * NUL-terminated); functions taking `const char *` take C string literals.
 */
#ifndef PROBEGATE_H
#define PROBEGATE_H

#include <stddef.h>
#include <stdint.h>

#define PG_ABI_VERSION 2

/* ---- strings, buffers, lists ---- */

typedef struct {
  const char *ptr;
  size_t len;
} pg_str;

pg_str pg_cstr(const char *s);
int pg_str_eq(pg_str a, pg_str b);
int pg_str_is(pg_str a, const char *b);

/* A growable string in the arena. Start from `pg_buf b = {0};`. */
typedef struct {
  char *ptr;
  size_t len, cap;
} pg_buf;

void pg_buf_addn(pg_buf *b, const char *p, size_t n);
void pg_buf_add(pg_buf *b, const char *s);
void pg_buf_add_str(pg_buf *b, pg_str s);
void pg_buf_add_int(pg_buf *b, long long v);
pg_str pg_buf_str(const pg_buf *b);

/* A growable list of strings. Start from `pg_strs l = {0};`. */
typedef struct {
  pg_str *items;
  size_t len, cap;
} pg_strs;

void pg_strs_push(pg_strs *l, pg_str s);
int pg_strs_has(const pg_strs *l, pg_str s);

void *pg_arena_alloc(size_t n);

/* ---- JSON ---- */

typedef enum { PG_NULL, PG_BOOL, PG_NUM, PG_STR, PG_ARR, PG_OBJ } pg_kind;

typedef struct pg_value {
  pg_kind kind;
  int boolean;
  double num;
  pg_str str;
  size_t count;             /* items of an array, members of an object */
  pg_str *keys;             /* object member names */
  struct pg_value *items;   /* array items, object member values */
} pg_value;

/* 0 on success; otherwise `error` says where the text broke. */
int pg_json_parse(pg_str text, pg_value *out, pg_str *error);
const pg_value *pg_value_get(const pg_value *obj, const char *key);
/* Appends `s` as a JSON string literal. */
void pg_json_string(pg_buf *b, pg_str s);

/* ---- the check input (the same document as ABI v1) ---- */

typedef struct {
  pg_str name;
  int ok;
  int has_exit_code;        /* 0 for file sources and commands that did not exit */
  long long exit_code;
  pg_str out;               /* stdout */
  pg_str err;               /* stderr */
  pg_str error;             /* the host's error text; empty when ok */
  int truncated;
  long long age_ms;
} pg_source;

typedef struct {
  pg_str mode;              /* node | controller */
  pg_source *sources;       /* only those the manifest lists */
  size_t nsources;
  pg_str *fact_keys, *fact_values;
  size_t nfacts;
  const pg_value *config;   /* NULL unless the manifest declares configuration */
#ifdef PG_HEALTH
  const pg_value *root;     /* the whole document (health checks read `round` from it) */
#endif
} pg_input;

const pg_source *pg_input_source(const pg_input *in, const char *name);
/* The fact's value, or a pg_str with ptr == NULL when it is absent. */
pg_str pg_input_fact(const pg_input *in, const char *name);
pg_strs pg_config_strings(const pg_input *in, const char *key, const char *const *fallback, size_t nfallback);
long long pg_config_int(const pg_input *in, const char *key, long long fallback);
double pg_config_number(const pg_input *in, const char *key, double fallback);
int pg_config_bool(const pg_input *in, const char *key, int fallback);
pg_str pg_config_string(const pg_input *in, const char *key, const char *fallback);

/* ---- verdicts ---- */

typedef struct pg_verdict pg_verdict;

/* reason: UpperCamelCase, at most 64 characters. */
pg_verdict *pg_pass(const char *reason, pg_str message);
pg_verdict *pg_warn(const char *reason, pg_str message);
pg_verdict *pg_fail(const char *reason, pg_str message);
/* Adds (or replaces) a fact; facts are reported whatever the status. */
pg_verdict *pg_fact(pg_verdict *v, const char *key, pg_str value);

/* The common opening of a check: source `name` present, succeeded and
 * printed usable text; otherwise `failure` is the SDK's verdict
 * (SourceMissing, SourceFailed, ParseError) to return as is. */
typedef struct {
  const pg_source *source;
  pg_str text;
  pg_verdict *failure;
} pg_opened;

pg_opened pg_open_source(const pg_input *in, const char *name);
/* SourceFailed, quoting the host's error and the first line of stderr. */
pg_verdict *pg_source_failed(const pg_source *src);
/* ParseError naming the source (and noting truncated output). */
pg_verdict *pg_parse_error(const pg_source *src, pg_str why);

/* ---- the manifest ---- */

typedef struct pg_manifest_builder pg_manifest_builder;

/* Defaults as the host applies them: modes [node], probe readiness, severity required. */
pg_manifest_builder *pg_manifest_new(const char *name, const char *version, const char *description);
pg_manifest_builder *pg_manifest_source(pg_manifest_builder *m, const char *source);
/* Replaces the default [node]; call once per mode (node, controller). */
pg_manifest_builder *pg_manifest_mode(pg_manifest_builder *m, const char *mode);
/* readiness (default), liveness or volume. */
pg_manifest_builder *pg_manifest_probe(pg_manifest_builder *m, const char *probe);
pg_manifest_builder *pg_manifest_advisory(pg_manifest_builder *m);
pg_manifest_builder *pg_manifest_strings_option(pg_manifest_builder *m, const char *key, const char *const *defaults, size_t n, const char *description);
pg_manifest_builder *pg_manifest_int_option(pg_manifest_builder *m, const char *key, long long dflt, long long min, const char *description);
pg_manifest_builder *pg_manifest_bool_option(pg_manifest_builder *m, const char *key, int dflt, const char *description);
pg_manifest_builder *pg_manifest_string_option(pg_manifest_builder *m, const char *key, const char *dflt, const char *description);

/* ---- text (the same answers as the AssemblyScript and Rust SDKs; lengths in UTF-16 units) ---- */

/* Next LF-separated line at *pos (a CR before the LF is dropped); 0 at the end. */
int pg_next_line(pg_str text, size_t *pos, pg_str *line);
/* Whitespace-separated fields of `line` into out[0..max); returns how many there are. */
size_t pg_fields(pg_str line, pg_str *out, size_t max);
/* "contains binary data", "is empty", or NULL when the text is usable. */
const char *pg_text_problem(pg_str s);
pg_str pg_one_line(pg_str s);
pg_str pg_clip(pg_str s, size_t max);
/* "a, b and c"; beyond max names, "a, b, … and 7 more". */
pg_str pg_human_list(const pg_strs *names, size_t max);
pg_str pg_first_line(pg_str s, size_t max);
int pg_is_valid_if_name(pg_str s);

/* ---- the host ---- */

/* A trace line: shown by `probegate plugin test`, logged by the gateway at debug. */
void pg_log(pg_str message);
/* Ends the call: the gateway reports PluginTrap "abort: MESSAGE". */
_Noreturn void pg_abort(const char *message);

/* ---- defined by the plugin ---- */

pg_manifest_builder *probegate_manifest(void);
pg_verdict *probegate_check(const pg_input *input);

/* ---- storage and volume health (plugins/ABI.md, "Health") ----
 * Compiled in with -DPG_HEALTH (package.json "probegate": {"health": true});
 * the plugin then defines probegate_check_health instead of probegate_check:
 *
 *   pg_health *probegate_check_health(const pg_input *input, pg_round round) {
 *     pg_health *h = pg_health_new(pg_warn("OstUnreachable", msg));
 *     pg_health_entry(h, PG_STORAGE_DEGRADED, "OstUnreachable", msg, pg_cstr("lustrefs"));
 *     pg_health_event(h, "Evicted", pg_cstr("lustrefs"), pg_cstr("lustrefs-OST0003"), at);
 *     return h;
 *   }
 */
#ifdef PG_HEALTH
#define PG_STORAGE_DEGRADED "STORAGE_DEGRADED"
#define PG_STORAGE_UNREACHABLE "STORAGE_UNREACHABLE"
#define PG_VOLUME_DEGRADED "DEGRADED"
#define PG_VOLUME_INACCESSIBLE "INACCESSIBLE"
#define PG_VOLUME_DATA_LOSS "DATA_LOSS"
#define PG_HEALTH_MAX 256

/* `round` of the input, epoch seconds; 0 when absent (previous_epoch 0: first round). */
typedef struct {
  long long epoch, previous_epoch;
} pg_round;

typedef struct pg_health pg_health;

pg_health *pg_health_new(pg_verdict *v);
/* One entry (the host keeps one per (status, reason): merge first); fs.ptr == NULL: none. */
pg_health *pg_health_entry(pg_health *h, const char *status, const char *reason, pg_str message, pg_str fs);
/* One event; fs/target ptr == NULL: none; at < 0: unknown. */
pg_health *pg_health_event(pg_health *h, const char *reason, pg_str fs, pg_str target, long long at);
/* Marks the verdict stable (storage and volume plugins, plugins/ABI.md "Health"): given the same sources,
 * facts, configuration and module it would be the same at any later round and carries no
 * events, so the host may reuse it instead of calling again. Never when it depends on time. */
pg_health *pg_health_stable(pg_health *h);
pg_round pg_input_round(const pg_input *in);

pg_health *probegate_check_health(const pg_input *input, pg_round round);
#endif

#endif
