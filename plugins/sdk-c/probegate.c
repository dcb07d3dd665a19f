/*
 * probegate check plugins in C: the ABI v2 exports, a bump arena, a JSON
 * reader/writer and the helpers declared in probegate.h. No libc: the few
 * memory functions the compiler may call are defined at the end.
 */
#include "probegate.h"

#define EXPORT(name) __attribute__((export_name(name)))
#define IMPORT(name) __attribute__((import_module("probegate_v2"), import_name(name)))

IMPORT("log") void pg_host_log(const char *ptr, size_t len);
IMPORT("abort") void pg_host_abort(const char *ptr, size_t len);

void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);

/* ---- arena ---- */

#define PAGE 65536u

static uintptr_t arena_base, arena_top, arena_end;

static void arena_init(void) {
  if (arena_base == 0) {
    arena_base = arena_top = arena_end = (uintptr_t)__builtin_wasm_memory_size(0) * PAGE;
  }
}

static int arena_grow_to(uintptr_t top) {
  if (top <= arena_end) return 1;
  size_t pages = (top - arena_end + PAGE - 1) / PAGE;
  if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return 0;
  arena_end += pages * PAGE;
  return 1;
}

void *pg_arena_alloc(size_t n) {
  arena_init();
  uintptr_t start = (arena_top + 7) & ~(uintptr_t)7;
  if (start + n < start || !arena_grow_to(start + n)) pg_abort("out of memory");
  arena_top = start + n;
  return (void *)start;
}

/* Grows the newest block in place; anything else is copied. */
static void *arena_realloc(void *p, size_t old, size_t n) {
  if (p && (uintptr_t)p + old == arena_top) {
    if (!arena_grow_to((uintptr_t)p + n)) pg_abort("out of memory");
    arena_top = (uintptr_t)p + n;
    return p;
  }
  void *q = pg_arena_alloc(n);
  if (p) memcpy(q, p, old < n ? old : n);
  return q;
}

/* ---- strings, buffers, lists ---- */

static size_t c_len(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

pg_str pg_cstr(const char *s) {
  pg_str r = {s, c_len(s)};
  return r;
}

int pg_str_eq(pg_str a, pg_str b) {
  if (a.len != b.len) return 0;
  for (size_t i = 0; i < a.len; i++)
    if (a.ptr[i] != b.ptr[i]) return 0;
  return 1;
}

int pg_str_is(pg_str a, const char *b) { return pg_str_eq(a, pg_cstr(b)); }

void pg_buf_addn(pg_buf *b, const char *p, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 64;
    while (cap < b->len + n) cap *= 2;
    b->ptr = arena_realloc(b->ptr, b->cap, cap);
    b->cap = cap;
  }
  memcpy(b->ptr + b->len, p, n);
  b->len += n;
}

void pg_buf_add(pg_buf *b, const char *s) { pg_buf_addn(b, s, c_len(s)); }
void pg_buf_add_str(pg_buf *b, pg_str s) { pg_buf_addn(b, s.ptr, s.len); }

void pg_buf_add_int(pg_buf *b, long long v) {
  char tmp[24];
  size_t i = sizeof tmp;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do {
    tmp[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) tmp[--i] = '-';
  pg_buf_addn(b, tmp + i, sizeof tmp - i);
}

pg_str pg_buf_str(const pg_buf *b) {
  pg_str r = {b->ptr ? b->ptr : "", b->len};
  return r;
}

void pg_strs_push(pg_strs *l, pg_str s) {
  if (l->len == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    l->items = arena_realloc(l->items, l->cap * sizeof(pg_str), cap * sizeof(pg_str));
    l->cap = cap;
  }
  l->items[l->len++] = s;
}

int pg_strs_has(const pg_strs *l, pg_str s) {
  for (size_t i = 0; i < l->len; i++)
    if (pg_str_eq(l->items[i], s)) return 1;
  return 0;
}

/* ---- JSON reader ---- */

typedef struct {
  const char *p;
  size_t i, n;
  const char *error;
} parser;

#define MAX_DEPTH 64

static void ws(parser *ps) {
  while (ps->i < ps->n) {
    char c = ps->p[ps->i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
    ps->i++;
  }
}

static int fail(parser *ps, const char *why) {
  if (!ps->error) ps->error = why;
  return 0;
}

static int hex4(parser *ps, unsigned *out) {
  unsigned v = 0;
  if (ps->i + 4 > ps->n) return fail(ps, "bad \\u escape");
  for (int k = 0; k < 4; k++) {
    char c = ps->p[ps->i++];
    unsigned d;
    if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
    else return fail(ps, "bad \\u escape");
    v = v * 16 + d;
  }
  *out = v;
  return 1;
}

static void put_utf8(pg_buf *b, unsigned cp) {
  char t[4];
  size_t n;
  if (cp < 0x80) {
    t[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    t[0] = (char)(0xc0 | (cp >> 6));
    t[1] = (char)(0x80 | (cp & 0x3f));
    n = 2;
  } else if (cp < 0x10000) {
    t[0] = (char)(0xe0 | (cp >> 12));
    t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    t[2] = (char)(0x80 | (cp & 0x3f));
    n = 3;
  } else {
    t[0] = (char)(0xf0 | (cp >> 18));
    t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    t[3] = (char)(0x80 | (cp & 0x3f));
    n = 4;
  }
  pg_buf_addn(b, t, n);
}

/* At a '"'. A string without escapes is a slice of the input, not a copy. */
static int parse_string(parser *ps, pg_str *out) {
  size_t start = ++ps->i;
  while (ps->i < ps->n && ps->p[ps->i] != '"' && ps->p[ps->i] != '\\') {
    if ((unsigned char)ps->p[ps->i] < 0x20) return fail(ps, "control character in string");
    ps->i++;
  }
  if (ps->i < ps->n && ps->p[ps->i] == '"') {
    out->ptr = ps->p + start;
    out->len = ps->i - start;
    ps->i++;
    return 1;
  }
  pg_buf b = {0};
  pg_buf_addn(&b, ps->p + start, ps->i - start);
  while (ps->i < ps->n) {
    char c = ps->p[ps->i++];
    if (c == '"') {
      *out = pg_buf_str(&b);
      return 1;
    }
    if ((unsigned char)c < 0x20) return fail(ps, "control character in string");
    if (c != '\\') {
      pg_buf_addn(&b, &c, 1);
      continue;
    }
    if (ps->i >= ps->n) break;
    char e = ps->p[ps->i++];
    switch (e) {
      case '"': pg_buf_add(&b, "\""); break;
      case '\\': pg_buf_add(&b, "\\"); break;
      case '/': pg_buf_add(&b, "/"); break;
      case 'b': pg_buf_add(&b, "\b"); break;
      case 'f': pg_buf_add(&b, "\f"); break;
      case 'n': pg_buf_add(&b, "\n"); break;
      case 'r': pg_buf_add(&b, "\r"); break;
      case 't': pg_buf_add(&b, "\t"); break;
      case 'u': {
        unsigned cp;
        if (!hex4(ps, &cp)) return 0;
        if (cp >= 0xd800 && cp < 0xdc00 && ps->i + 6 <= ps->n && ps->p[ps->i] == '\\' && ps->p[ps->i + 1] == 'u') {
          size_t save = ps->i;
          unsigned lo;
          ps->i += 2;
          if (hex4(ps, &lo) && lo >= 0xdc00 && lo < 0xe000) cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          else {
            ps->i = save;
            ps->error = 0;
          }
        }
        /* A lone surrogate has no UTF-8 form: it becomes U+FFFD. */
        if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd;
        put_utf8(&b, cp);
        break;
      }
      default: return fail(ps, "bad escape");
    }
  }
  return fail(ps, "unterminated string");
}

static int parse_value(parser *ps, pg_value *v, int depth);

static int parse_number(parser *ps, pg_value *v) {
  int neg = 0;
  double x = 0;
  if (ps->p[ps->i] == '-') {
    neg = 1;
    ps->i++;
  }
  size_t start = ps->i;
  while (ps->i < ps->n && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9') x = x * 10 + (ps->p[ps->i++] - '0');
  if (ps->i == start) return fail(ps, "unexpected character");
  if (ps->i < ps->n && ps->p[ps->i] == '.') {
    double scale = 1;
    ps->i++;
    while (ps->i < ps->n && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9') {
      scale /= 10;
      x += (ps->p[ps->i++] - '0') * scale;
    }
  }
  if (ps->i < ps->n && (ps->p[ps->i] == 'e' || ps->p[ps->i] == 'E')) {
    int eneg = 0, e = 0;
    ps->i++;
    if (ps->i < ps->n && (ps->p[ps->i] == '-' || ps->p[ps->i] == '+')) eneg = ps->p[ps->i++] == '-';
    while (ps->i < ps->n && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9') {
      e = e * 10 + (ps->p[ps->i++] - '0');
      if (e > 400) e = 400;
    }
    while (e-- > 0) x = eneg ? x / 10 : x * 10;
  }
  v->kind = PG_NUM;
  v->num = neg ? -x : x;
  return 1;
}

static int word(parser *ps, const char *w) {
  size_t n = c_len(w);
  if (ps->i + n > ps->n) return fail(ps, "unexpected word");
  for (size_t k = 0; k < n; k++)
    if (ps->p[ps->i + k] != w[k]) return fail(ps, "unexpected word");
  ps->i += n;
  return 1;
}

static int parse_container(parser *ps, pg_value *v, int depth, int object) {
  char close = object ? '}' : ']';
  size_t cap = 0;
  v->kind = object ? PG_OBJ : PG_ARR;
  ps->i++;
  ws(ps);
  if (ps->i < ps->n && ps->p[ps->i] == close) {
    ps->i++;
    return 1;
  }
  for (;;) {
    if (v->count == cap) {
      size_t ncap = cap ? cap * 2 : 4;
      v->items = arena_realloc(v->items, cap * sizeof(pg_value), ncap * sizeof(pg_value));
      if (object) v->keys = arena_realloc(v->keys, cap * sizeof(pg_str), ncap * sizeof(pg_str));
      cap = ncap;
    }
    ws(ps);
    if (object) {
      if (ps->i >= ps->n || ps->p[ps->i] != '"') return fail(ps, "expected a member name");
      if (!parse_string(ps, &v->keys[v->count])) return 0;
      ws(ps);
      if (ps->i >= ps->n || ps->p[ps->i] != ':') return fail(ps, "expected ':'");
      ps->i++;
    }
    if (!parse_value(ps, &v->items[v->count], depth + 1)) return 0;
    v->count++;
    ws(ps);
    if (ps->i < ps->n && ps->p[ps->i] == ',') {
      ps->i++;
      continue;
    }
    if (ps->i < ps->n && ps->p[ps->i] == close) {
      ps->i++;
      return 1;
    }
    return fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static int parse_value(parser *ps, pg_value *v, int depth) {
  memset(v, 0, sizeof *v);
  if (depth > MAX_DEPTH) return fail(ps, "nested too deeply");
  ws(ps);
  if (ps->i >= ps->n) return fail(ps, "unexpected end");
  switch (ps->p[ps->i]) {
    case '{': return parse_container(ps, v, depth, 1);
    case '[': return parse_container(ps, v, depth, 0);
    case '"': v->kind = PG_STR; return parse_string(ps, &v->str);
    case 't': v->kind = PG_BOOL; v->boolean = 1; return word(ps, "true");
    case 'f': v->kind = PG_BOOL; return word(ps, "false");
    case 'n': v->kind = PG_NULL; return word(ps, "null");
    default: return parse_number(ps, v);
  }
}

int pg_json_parse(pg_str text, pg_value *out, pg_str *error) {
  parser ps = {text.ptr, 0, text.len, 0};
  if (parse_value(&ps, out, 0)) {
    ws(&ps);
    if (ps.i == ps.n) return 0;
    fail(&ps, "trailing characters after the document");
  }
  if (error) {
    pg_buf b = {0};
    pg_buf_add(&b, "invalid JSON at byte ");
    pg_buf_add_int(&b, (long long)ps.i);
    pg_buf_add(&b, ": ");
    pg_buf_add(&b, ps.error ? ps.error : "unexpected input");
    *error = pg_buf_str(&b);
  }
  return 1;
}

const pg_value *pg_value_get(const pg_value *obj, const char *key) {
  if (!obj || obj->kind != PG_OBJ) return 0;
  pg_str k = pg_cstr(key);
  for (size_t i = 0; i < obj->count; i++)
    if (pg_str_eq(obj->keys[i], k)) return &obj->items[i];
  return 0;
}

/* ---- JSON writer ---- */

void pg_json_string(pg_buf *b, pg_str s) {
  static const char hex[] = "0123456789abcdef";
  size_t run = 0;
  pg_buf_add(b, "\"");
  for (size_t i = 0; i < s.len; i++) {
    unsigned char c = (unsigned char)s.ptr[i];
    const char *esc = 0;
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c == '\n') esc = "\\n";
    else if (c == '\r') esc = "\\r";
    else if (c == '\t') esc = "\\t";
    else if (c >= 0x20 && c != 0x7f) continue;
    pg_buf_addn(b, s.ptr + run, i - run);
    if (esc) pg_buf_add(b, esc);
    else {
      char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      pg_buf_addn(b, u, 6);
    }
    run = i + 1;
  }
  pg_buf_addn(b, s.ptr + run, s.len - run);
  pg_buf_add(b, "\"");
}

static void member(pg_buf *b, const char *key) {
  if (b->len > 1) pg_buf_add(b, ",");
  pg_json_string(b, pg_cstr(key));
  pg_buf_add(b, ":");
}

static void member_str(pg_buf *b, const char *key, pg_str v) {
  member(b, key);
  pg_json_string(b, v);
}

static void member_strs(pg_buf *b, const char *key, const pg_strs *l) {
  member(b, key);
  pg_buf_add(b, "[");
  for (size_t i = 0; i < l->len; i++) {
    if (i) pg_buf_add(b, ",");
    pg_json_string(b, l->items[i]);
  }
  pg_buf_add(b, "]");
}

/* ---- the input ---- */

static pg_str str_of(const pg_value *v) {
  pg_str empty = {"", 0};
  return v && v->kind == PG_STR ? v->str : empty;
}

static int parse_input(pg_str text, pg_input *in, pg_str *error) {
  pg_value *root = pg_arena_alloc(sizeof *root);
  memset(in, 0, sizeof *in);
  if (pg_json_parse(text, root, error)) return 1;
  if (root->kind != PG_OBJ) {
    *error = pg_cstr("input is not a JSON object");
    return 1;
  }
  in->mode = str_of(pg_value_get(root, "mode"));
  const pg_value *srcs = pg_value_get(root, "sources");
  if (srcs && srcs->kind == PG_OBJ) {
    in->sources = pg_arena_alloc(srcs->count * sizeof(pg_source) + 1);
    for (size_t i = 0; i < srcs->count; i++) {
      const pg_value *s = &srcs->items[i];
      pg_source *d = &in->sources[in->nsources++];
      memset(d, 0, sizeof *d);
      d->name = srcs->keys[i];
      const pg_value *f;
      if ((f = pg_value_get(s, "ok")) && f->kind == PG_BOOL) d->ok = f->boolean;
      if ((f = pg_value_get(s, "exitCode")) && f->kind == PG_NUM) {
        d->has_exit_code = 1;
        d->exit_code = (long long)f->num;
      }
      d->out = str_of(pg_value_get(s, "stdout"));
      d->err = str_of(pg_value_get(s, "stderr"));
      d->error = str_of(pg_value_get(s, "error"));
      if ((f = pg_value_get(s, "truncated")) && f->kind == PG_BOOL) d->truncated = f->boolean;
      if ((f = pg_value_get(s, "ageMs")) && f->kind == PG_NUM) d->age_ms = (long long)f->num;
    }
  }
  const pg_value *facts = pg_value_get(root, "facts");
  if (facts && facts->kind == PG_OBJ) {
    in->fact_keys = facts->keys;
    in->fact_values = pg_arena_alloc(facts->count * sizeof(pg_str) + 1);
    for (size_t i = 0; i < facts->count; i++) in->fact_values[i] = str_of(&facts->items[i]);
    in->nfacts = facts->count;
  }
  const pg_value *config = pg_value_get(root, "config");
  if (config && config->kind == PG_OBJ) in->config = config;
#ifdef PG_HEALTH
  in->root = root;
#endif
  return 0;
}

const pg_source *pg_input_source(const pg_input *in, const char *name) {
  pg_str n = pg_cstr(name);
  for (size_t i = 0; i < in->nsources; i++)
    if (pg_str_eq(in->sources[i].name, n)) return &in->sources[i];
  return 0;
}

pg_str pg_input_fact(const pg_input *in, const char *name) {
  pg_str n = pg_cstr(name), none = {0, 0};
  for (size_t i = 0; i < in->nfacts; i++)
    if (pg_str_eq(in->fact_keys[i], n)) return in->fact_values[i];
  return none;
}

pg_strs pg_config_strings(const pg_input *in, const char *key, const char *const *fallback, size_t nfallback) {
  pg_strs l = {0};
  const pg_value *v = pg_value_get(in->config, key);
  int usable = v && v->kind == PG_ARR;
  for (size_t i = 0; usable && i < v->count; i++)
    if (v->items[i].kind != PG_STR) usable = 0;
  if (usable) {
    for (size_t i = 0; i < v->count; i++) pg_strs_push(&l, v->items[i].str);
  } else {
    for (size_t i = 0; i < nfallback; i++) pg_strs_push(&l, pg_cstr(fallback[i]));
  }
  return l;
}

long long pg_config_int(const pg_input *in, const char *key, long long fallback) {
  const pg_value *v = pg_value_get(in->config, key);
  return v && v->kind == PG_NUM && v->num == (double)(long long)v->num ? (long long)v->num : fallback;
}

double pg_config_number(const pg_input *in, const char *key, double fallback) {
  const pg_value *v = pg_value_get(in->config, key);
  return v && v->kind == PG_NUM ? v->num : fallback;
}

int pg_config_bool(const pg_input *in, const char *key, int fallback) {
  const pg_value *v = pg_value_get(in->config, key);
  return v && v->kind == PG_BOOL ? v->boolean : fallback;
}

pg_str pg_config_string(const pg_input *in, const char *key, const char *fallback) {
  const pg_value *v = pg_value_get(in->config, key);
  return v && v->kind == PG_STR ? v->str : pg_cstr(fallback);
}

/* ---- text ---- */

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x0b || c == 0x0c; }

int pg_next_line(pg_str text, size_t *pos, pg_str *line) {
  size_t s = *pos, e = s;
  if (s >= text.len) return 0;
  while (e < text.len && text.ptr[e] != '\n') e++;
  *pos = e + 1;
  if (e > s && text.ptr[e - 1] == '\r') e--;
  line->ptr = text.ptr + s;
  line->len = e - s;
  return 1;
}

size_t pg_fields(pg_str line, pg_str *out, size_t max) {
  size_t k = 0, i = 0;
  while (i < line.len) {
    while (i < line.len && is_space((unsigned char)line.ptr[i])) i++;
    size_t s = i;
    while (i < line.len && !is_space((unsigned char)line.ptr[i])) i++;
    if (i > s) {
      if (k < max) {
        out[k].ptr = line.ptr + s;
        out[k].len = i - s;
      }
      k++;
    }
  }
  return k;
}

/* Decodes one UTF-8 character at s[i] (the host hands valid UTF-8). */
static unsigned next_char(pg_str s, size_t *i) {
  unsigned char c = (unsigned char)s.ptr[*i];
  unsigned cp;
  size_t n;
  if (c < 0x80) { cp = c; n = 1; }
  else if (c < 0xe0) { cp = c & 0x1f; n = 2; }
  else if (c < 0xf0) { cp = c & 0x0f; n = 3; }
  else { cp = c & 0x07; n = 4; }
  if (*i + n > s.len) n = s.len - *i;
  for (size_t k = 1; k < n; k++) cp = (cp << 6) | ((unsigned char)s.ptr[*i + k] & 0x3f);
  *i += n;
  return cp;
}

const char *pg_text_problem(pg_str s) {
  int blank = 1;
  for (size_t i = 0; i < s.len;) {
    unsigned c = next_char(s, &i);
    if (c == 0xfffd || c == 0x7f || (c < 32 && c != '\t' && c != '\n' && c != '\r')) return "contains binary data";
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') blank = 0;
  }
  return blank ? "is empty" : 0;
}

pg_str pg_one_line(pg_str s) {
  pg_buf b = {0};
  int pending = 0;
  for (size_t i = 0; i < s.len;) {
    size_t at = i;
    unsigned c = next_char(s, &i);
    if (c <= 32 || c == 0x7f) {
      pending = 1;
      continue;
    }
    if (pending && b.len) pg_buf_add(&b, " ");
    pending = 0;
    pg_buf_addn(&b, s.ptr + at, i - at);
  }
  return pg_buf_str(&b);
}

pg_str pg_clip(pg_str s, size_t max) {
  pg_str empty = {"", 0};
  if (max < 1) return empty;
  size_t units = 0, end = 0, total = 0;
  for (size_t i = 0; i < s.len;) total += next_char(s, &i) >= 0x10000 ? 2 : 1;
  if (total <= max) return s;
  for (size_t i = 0; i < s.len;) {
    size_t u = next_char(s, &i) >= 0x10000 ? 2 : 1;
    if (units + u > max - 1) break;
    units += u;
    end = i;
  }
  pg_buf b = {0};
  pg_buf_addn(&b, s.ptr, end);
  pg_buf_add(&b, "\xe2\x80\xa6"); /* … */
  return pg_buf_str(&b);
}

pg_str pg_human_list(const pg_strs *names, size_t max) {
  pg_buf b = {0};
  size_t n = names->len;
  if (n == 0) return pg_buf_str(&b);
  if (n == 1) return names->items[0];
  size_t shown = n <= max ? n - 1 : max;
  for (size_t i = 0; i < shown; i++) {
    if (i) pg_buf_add(&b, ", ");
    pg_buf_add_str(&b, names->items[i]);
  }
  pg_buf_add(&b, " and ");
  if (n <= max) pg_buf_add_str(&b, names->items[n - 1]);
  else {
    pg_buf_add_int(&b, (long long)(n - max));
    pg_buf_add(&b, " more");
  }
  return pg_buf_str(&b);
}

static pg_str trim(pg_str s) {
  while (s.len && is_space((unsigned char)s.ptr[0])) {
    s.ptr++;
    s.len--;
  }
  while (s.len && is_space((unsigned char)s.ptr[s.len - 1])) s.len--;
  return s;
}

pg_str pg_first_line(pg_str s, size_t max) {
  size_t pos = 0;
  pg_str line, empty = {"", 0};
  while (pg_next_line(s, &pos, &line)) {
    line = trim(line);
    if (line.len) return pg_clip(pg_one_line(line), max);
  }
  return empty;
}

int pg_is_valid_if_name(pg_str s) {
  if (s.len < 1 || s.len > 15 || pg_str_is(s, ".") || pg_str_is(s, "..")) return 0;
  for (size_t i = 0; i < s.len; i++) {
    unsigned char c = (unsigned char)s.ptr[i];
    if (c <= 32 || c >= 0x7f || c == '/' || c == ':' || c == ',') return 0;
  }
  return 1;
}

/* ---- verdicts ---- */

#define OUTPUT_LIMIT (60 * 1024)
#define MESSAGE_LIMIT 4000
#define REASON_LIMIT 64

struct pg_verdict {
  const char *status;
  pg_str reason, message;
  pg_strs fact_keys, fact_values;
};

static pg_verdict *verdict(const char *status, const char *reason, pg_str message) {
  pg_verdict *v = pg_arena_alloc(sizeof *v);
  memset(v, 0, sizeof *v);
  v->status = status;
  v->reason = pg_cstr(reason);
  v->message = message;
  return v;
}

pg_verdict *pg_pass(const char *reason, pg_str message) { return verdict("pass", reason, message); }
pg_verdict *pg_warn(const char *reason, pg_str message) { return verdict("warn", reason, message); }
pg_verdict *pg_fail(const char *reason, pg_str message) { return verdict("fail", reason, message); }

pg_verdict *pg_fact(pg_verdict *v, const char *key, pg_str value) {
  pg_str k = pg_cstr(key);
  for (size_t i = 0; i < v->fact_keys.len; i++) {
    if (pg_str_eq(v->fact_keys.items[i], k)) {
      v->fact_values.items[i] = value;
      return v;
    }
  }
  pg_strs_push(&v->fact_keys, k);
  pg_strs_push(&v->fact_values, value);
  return v;
}

static pg_str render(const pg_verdict *v, size_t message_limit, int with_facts) {
  pg_buf b = {0};
  pg_buf_add(&b, "{");
  member_str(&b, "status", pg_cstr(v->status));
  member_str(&b, "reason", pg_clip(v->reason, REASON_LIMIT));
  member_str(&b, "message", pg_clip(v->message, message_limit));
  if (with_facts && v->fact_keys.len) {
    pg_buf f = {0};
    pg_buf_add(&f, "{");
    for (size_t i = 0; i < v->fact_keys.len; i++) {
      if (i) pg_buf_add(&f, ",");
      pg_json_string(&f, v->fact_keys.items[i]);
      pg_buf_add(&f, ":");
      pg_json_string(&f, v->fact_values.items[i]);
    }
    pg_buf_add(&f, "}");
    member(&b, "facts");
    pg_buf_add_str(&b, pg_buf_str(&f));
  }
  pg_buf_add(&b, "}");
  return pg_buf_str(&b);
}

/* Within the ABI's limits: facts are dropped before the verdict is. */
static pg_str verdict_json(const pg_verdict *v) {
  pg_str full = render(v, MESSAGE_LIMIT, 1);
  return full.len <= OUTPUT_LIMIT ? full : render(v, 500, 0);
}

pg_verdict *pg_source_failed(const pg_source *src) {
  pg_buf b = {0};
  pg_buf_add(&b, "source ");
  pg_buf_add_str(&b, src->name);
  pg_buf_add(&b, " failed: ");
  if (src->error.len) pg_buf_add_str(&b, pg_one_line(src->error));
  else pg_buf_add(&b, "unknown error");
  pg_str detail = pg_first_line(src->err, 200);
  if (detail.len) {
    pg_buf_add(&b, " (");
    pg_buf_add_str(&b, detail);
    pg_buf_add(&b, ")");
  }
  return pg_fail("SourceFailed", pg_buf_str(&b));
}

pg_verdict *pg_parse_error(const pg_source *src, pg_str why) {
  pg_buf b = {0};
  pg_buf_add(&b, "cannot parse ");
  pg_buf_add_str(&b, src->name);
  pg_buf_add(&b, ": ");
  pg_buf_add_str(&b, why);
  if (src->truncated) pg_buf_add(&b, " (output was truncated by the host)");
  return pg_fail("ParseError", pg_buf_str(&b));
}

pg_opened pg_open_source(const pg_input *in, const char *name) {
  pg_opened o = {0};
  o.source = pg_input_source(in, name);
  if (!o.source) {
    pg_buf b = {0};
    pg_buf_add(&b, "source ");
    pg_buf_add(&b, name);
    pg_buf_add(&b, " was not provided to the check");
    o.failure = pg_fail("SourceMissing", pg_buf_str(&b));
    return o;
  }
  if (!o.source->ok) {
    o.failure = pg_source_failed(o.source);
    return o;
  }
  const char *problem = pg_text_problem(o.source->out);
  if (problem) {
    pg_buf b = {0};
    pg_buf_add(&b, "output ");
    pg_buf_add(&b, problem);
    o.failure = pg_parse_error(o.source, pg_buf_str(&b));
    return o;
  }
  o.text = o.source->out;
  return o;
}

/* ---- the manifest ---- */

struct pg_manifest_builder {
  pg_str name, version, description, probe, severity;
  pg_strs sources, modes;
  pg_buf options; /* rendered "key":{…} members of config */
};

pg_manifest_builder *pg_manifest_new(const char *name, const char *version, const char *description) {
  pg_manifest_builder *m = pg_arena_alloc(sizeof *m);
  memset(m, 0, sizeof *m);
  m->name = pg_cstr(name);
  m->version = pg_cstr(version);
  m->description = pg_cstr(description);
  m->probe = pg_cstr("readiness");
  m->severity = pg_cstr("required");
  pg_strs_push(&m->modes, pg_cstr("node"));
  return m;
}

pg_manifest_builder *pg_manifest_source(pg_manifest_builder *m, const char *source) {
  pg_strs_push(&m->sources, pg_cstr(source));
  return m;
}

pg_manifest_builder *pg_manifest_mode(pg_manifest_builder *m, const char *mode) {
  pg_str md = pg_cstr(mode);
  if (m->modes.len == 1 && pg_str_is(m->modes.items[0], "node") && !pg_str_is(md, "node")) m->modes.items[0] = md;
  else if (!pg_strs_has(&m->modes, md)) pg_strs_push(&m->modes, md);
  return m;
}

pg_manifest_builder *pg_manifest_probe(pg_manifest_builder *m, const char *probe) {
  m->probe = pg_cstr(probe);
  return m;
}

pg_manifest_builder *pg_manifest_advisory(pg_manifest_builder *m) {
  m->severity = pg_cstr("advisory");
  return m;
}

/* Opens option `key`; the caller adds "default" (and "min"), then option_end closes it. */
static pg_buf *option_begin(pg_manifest_builder *m, const char *key) {
  if (m->options.len) pg_buf_add(&m->options, ",");
  pg_json_string(&m->options, pg_cstr(key));
  pg_buf_add(&m->options, ":{");
  return &m->options;
}

static pg_manifest_builder *option_end(pg_manifest_builder *m, const char *type, const char *description) {
  pg_buf_add(&m->options, ",\"type\":");
  pg_json_string(&m->options, pg_cstr(type));
  pg_buf_add(&m->options, ",\"description\":");
  pg_json_string(&m->options, pg_cstr(description));
  pg_buf_add(&m->options, "}");
  return m;
}

pg_manifest_builder *pg_manifest_strings_option(pg_manifest_builder *m, const char *key, const char *const *defaults, size_t n, const char *description) {
  pg_buf *b = option_begin(m, key);
  pg_buf_add(b, "\"default\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) pg_buf_add(b, ",");
    pg_json_string(b, pg_cstr(defaults[i]));
  }
  pg_buf_add(b, "]");
  return option_end(m, "string[]", description);
}

pg_manifest_builder *pg_manifest_int_option(pg_manifest_builder *m, const char *key, long long dflt, long long min, const char *description) {
  pg_buf *b = option_begin(m, key);
  pg_buf_add(b, "\"default\":");
  pg_buf_add_int(b, dflt);
  pg_buf_add(b, ",\"min\":");
  pg_buf_add_int(b, min);
  return option_end(m, "integer", description);
}

pg_manifest_builder *pg_manifest_bool_option(pg_manifest_builder *m, const char *key, int dflt, const char *description) {
  pg_buf *b = option_begin(m, key);
  pg_buf_add(b, dflt ? "\"default\":true" : "\"default\":false");
  return option_end(m, "boolean", description);
}

pg_manifest_builder *pg_manifest_string_option(pg_manifest_builder *m, const char *key, const char *dflt, const char *description) {
  pg_buf *b = option_begin(m, key);
  pg_buf_add(b, "\"default\":");
  pg_json_string(b, pg_cstr(dflt));
  return option_end(m, "string", description);
}

static pg_str manifest_json(const pg_manifest_builder *m) {
  pg_buf b = {0};
  pg_buf_add(&b, "{\"abi\":2");
  member_str(&b, "name", m->name);
  member_str(&b, "version", m->version);
  member_str(&b, "description", m->description);
  member_strs(&b, "sources", &m->sources);
  member_strs(&b, "modes", &m->modes);
  member_str(&b, "probe", m->probe);
  member_str(&b, "severity", m->severity);
  if (m->options.len) {
    member(&b, "config");
    pg_buf_add(&b, "{");
    pg_buf_add_str(&b, pg_buf_str(&m->options));
    pg_buf_add(&b, "}");
  }
  pg_buf_add(&b, "}");
  return pg_buf_str(&b);
}

/* ---- the host ---- */

void pg_log(pg_str message) { pg_host_log(message.ptr, message.len); }

_Noreturn void pg_abort(const char *message) {
  pg_host_abort(message, c_len(message));
  __builtin_trap();
}

/* ---- the ABI v2 exports ---- */

static uint64_t packed(pg_str s) { return (uint64_t)(uintptr_t)s.ptr | ((uint64_t)s.len << 32); }

EXPORT("pg_alloc") void *pg_alloc(size_t len) { return pg_arena_alloc(len ? len : 1); }

EXPORT("pg_reset") void pg_reset(void) {
  arena_init();
  arena_top = arena_base;
}

EXPORT("pg_manifest") uint64_t pg_manifest(void) { return packed(manifest_json(probegate_manifest())); }

#ifndef PG_HEALTH
EXPORT("pg_check") uint64_t pg_check(const char *ptr, size_t len) {
  pg_str text = {ptr, len}, error = {0, 0};
  pg_input in;
  pg_verdict *v;
  if (parse_input(text, &in, &error)) v = pg_fail("BadInput", error);
  else {
    v = probegate_check(&in);
    if (!v) v = pg_fail("NoVerdict", pg_cstr("the check returned no verdict"));
  }
  return packed(verdict_json(v));
}
#endif

/* ---- what the compiler may call (no libc) ----
 * Built with -mbulk-memory (as the SDK's build does), these are single
 * memory.copy / memory.fill instructions; without it, plain loops, which
 * -fno-builtin keeps the compiler from turning back into calls to themselves. */

void *memcpy(void *dst, const void *src, size_t n) {
#ifdef __wasm_bulk_memory__
  return __builtin_memcpy(dst, src, n);
#else
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n--) *d++ = *s++;
  return dst;
#endif
}

void *memmove(void *dst, const void *src, size_t n) {
#ifdef __wasm_bulk_memory__
  return __builtin_memmove(dst, src, n);
#else
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s) return memcpy(dst, src, n);
  while (n--) d[n] = s[n];
  return dst;
#endif
}

void *memset(void *dst, int c, size_t n) {
#ifdef __wasm_bulk_memory__
  return __builtin_memset(dst, c, n);
#else
  unsigned char *d = dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
#endif
}

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i]) return x[i] - y[i];
  return 0;
}

/* ---- storage and volume health (-DPG_HEALTH; see probegate.h) ---- */
#ifdef PG_HEALTH

typedef struct {
  const char *status, *reason;
  pg_str message, fs;
} health_entry;

typedef struct {
  const char *reason;
  pg_str fs, target;
  long long at;
} health_event;

struct pg_health {
  pg_verdict *verdict;
  health_entry entries[PG_HEALTH_MAX];
  size_t nentries;
  health_event events[PG_HEALTH_MAX];
  size_t nevents;
  int stable;
};

pg_health *pg_health_new(pg_verdict *v) {
  pg_health *h = pg_arena_alloc(sizeof *h);
  memset(h, 0, sizeof *h);
  h->verdict = v;
  return h;
}

pg_health *pg_health_entry(pg_health *h, const char *status, const char *reason, pg_str message, pg_str fs) {
  if (h->nentries < PG_HEALTH_MAX) {
    health_entry *e = &h->entries[h->nentries++];
    e->status = status;
    e->reason = reason;
    e->message = message;
    e->fs = fs;
  }
  return h;
}

pg_health *pg_health_event(pg_health *h, const char *reason, pg_str fs, pg_str target, long long at) {
  if (h->nevents < PG_HEALTH_MAX) {
    health_event *e = &h->events[h->nevents++];
    e->reason = reason;
    e->fs = fs;
    e->target = target;
    e->at = at;
  }
  return h;
}

pg_health *pg_health_stable(pg_health *h) {
  h->stable = 1;
  return h;
}

static long long epoch_of(const pg_value *v) {
  if (!v || v->kind != PG_NUM || !(v->num >= 0) || v->num > 9007199254740991.0) return 0;
  return (long long)v->num;
}

pg_round pg_input_round(const pg_input *in) {
  pg_round r = {0, 0};
  const pg_value *round = in->root ? pg_value_get(in->root, "round") : 0;
  if (round && round->kind == PG_OBJ) {
    r.epoch = epoch_of(pg_value_get(round, "epoch"));
    r.previous_epoch = epoch_of(pg_value_get(round, "previousEpoch"));
  }
  return r;
}

/* The verdict's JSON with `health` and `events` spliced in before its closing brace. */
static pg_str health_render(const pg_health *h, size_t limit, int with_events) {
  pg_str base = verdict_json(h->verdict);
  pg_buf b = {0};
  pg_buf_addn(&b, base.ptr, base.len - 1);
  if (h->nentries) {
    pg_buf_add(&b, ",\"health\":[");
    for (size_t i = 0; i < h->nentries; i++) {
      const health_entry *e = &h->entries[i];
      pg_buf o = {0};
      pg_buf_add(&o, "{");
      member_str(&o, "status", pg_cstr(e->status));
      member_str(&o, "reason", pg_clip(pg_cstr(e->reason), REASON_LIMIT));
      member_str(&o, "message", pg_clip(pg_one_line(e->message), limit));
      if (e->fs.ptr) member_str(&o, "fs", e->fs);
      pg_buf_add(&o, "}");
      if (i) pg_buf_add(&b, ",");
      pg_buf_add_str(&b, pg_buf_str(&o));
    }
    pg_buf_add(&b, "]");
  }
  if (with_events && h->nevents) {
    pg_buf_add(&b, ",\"events\":[");
    for (size_t i = 0; i < h->nevents; i++) {
      const health_event *e = &h->events[i];
      pg_buf o = {0};
      pg_buf_add(&o, "{");
      member_str(&o, "reason", pg_clip(pg_cstr(e->reason), REASON_LIMIT));
      if (e->fs.ptr) member_str(&o, "fs", pg_clip(e->fs, 128));
      if (e->target.ptr) member_str(&o, "target", pg_clip(e->target, 128));
      if (e->at >= 0) {
        member(&o, "at");
        pg_buf_add_int(&o, e->at);
      }
      pg_buf_add(&o, "}");
      if (i) pg_buf_add(&b, ",");
      pg_buf_add_str(&b, pg_buf_str(&o));
    }
    pg_buf_add(&b, "]");
  }
  if (h->stable) pg_buf_add(&b, ",\"stable\":true");
  pg_buf_add(&b, "}");
  return pg_buf_str(&b);
}

static pg_str health_json(const pg_health *h) {
  pg_str out = health_render(h, 1024, 1);
  if (out.len <= OUTPUT_LIMIT) return out;
  out = health_render(h, 120, 1);
  if (out.len <= OUTPUT_LIMIT) return out;
  out = health_render(h, 120, 0);
  return out.len <= OUTPUT_LIMIT ? out : verdict_json(h->verdict);
}

EXPORT("pg_check") uint64_t pg_check(const char *ptr, size_t len) {
  pg_str text = {ptr, len}, error = {0, 0};
  pg_input in;
  pg_health *h;
  if (parse_input(text, &in, &error)) h = pg_health_new(pg_fail("BadInput", error));
  else {
    h = probegate_check_health(&in, pg_input_round(&in));
    if (!h) h = pg_health_new(pg_fail("NoVerdict", pg_cstr("the check returned no verdict")));
    if (!h->verdict) h->verdict = pg_fail("NoVerdict", pg_cstr("the check returned no verdict"));
  }
  return packed(health_json(h));
}
#endif
