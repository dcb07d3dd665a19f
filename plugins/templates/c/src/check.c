/* {{name}}: TODO say what this check proves and why it matters. */
#include "probegate.h"

#define SOURCE "{{source}}"
/* TODO replace this rule: the source must print at least MIN_LINES non-empty lines. */
#define MIN_LINES 2

pg_manifest_builder *probegate_manifest(void) {
  return pg_manifest_source(pg_manifest_new("{{name}}", "0.1.0", "TODO one-line description"), SOURCE);
}

/* pg_open_source() answers a missing or failed source and empty or binary
 * output itself (SourceMissing, SourceFailed, ParseError). Memory comes from
 * the SDK's arena, which the host resets after every call: nothing to free. */
pg_verdict *probegate_check(const pg_input *in) {
  pg_opened o = pg_open_source(in, SOURCE);
  if (o.failure) return o.failure;
  long long count = 0;
  size_t pos = 0;
  pg_str line, field;
  while (pg_next_line(o.text, &pos, &line))
    if (pg_fields(line, &field, 1) > 0) count++;
  pg_buf msg = {0};
  pg_buf_add(&msg, SOURCE ": ");
  pg_buf_add_int(&msg, count);
  pg_buf_add(&msg, " non-empty line(s)");
  /* Shown by `npm test` when a case fails, and in the gateway log at --log-level debug. */
  pg_log(pg_buf_str(&msg));
  if (count == 0) return pg_parse_error(o.source, pg_cstr("no content"));
  pg_buf out = {0};
  pg_buf_add(&out, SOURCE " printed ");
  pg_buf_add_int(&out, count);
  pg_buf_add(&out, " line(s)");
  if (count < MIN_LINES) {
    pg_buf_add(&out, "; need ");
    pg_buf_add_int(&out, MIN_LINES);
    return pg_fail("TooFewLines", pg_buf_str(&out));
  }
  return pg_pass("Ok", pg_buf_str(&out));
}
