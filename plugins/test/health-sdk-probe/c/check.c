/* Test-only: echoes the round and reports facts `n` entries and `e` events
 * (and stable when fact `stable` is 1),
 * as plugins/test/sdk-probe's healthProbe does for the AssemblyScript SDK. */
#include "probegate.h"

static long long fact_int(const pg_input *in, const char *name) {
  pg_str s = pg_input_fact(in, name);
  long long v = 0;
  for (size_t i = 0; s.ptr && i < s.len && s.ptr[i] >= '0' && s.ptr[i] <= '9'; i++) v = v * 10 + (s.ptr[i] - '0');
  return v;
}

pg_manifest_builder *probegate_manifest(void) {
  return pg_manifest_probe(pg_manifest_source(pg_manifest_new("health-probe-c", "1.0.0", "test-only health output"), "lctl.imports"), "storage");
}

pg_health *probegate_check_health(const pg_input *in, pg_round round) {
  pg_buf m = {0};
  pg_buf_add_int(&m, round.epoch);
  pg_buf_add(&m, "/");
  pg_buf_add_int(&m, round.previous_epoch);
  pg_health *h = pg_health_new(pg_warn("Probe", pg_buf_str(&m)));
  pg_str status = pg_input_fact(in, "status"), msg = pg_input_fact(in, "msg");
  char status_z[32] = {0};
  for (size_t i = 0; status.ptr && i < status.len && i < 31; i++) status_z[i] = status.ptr[i];
  const char *status_c = pg_arena_alloc(32);
  for (int i = 0; i < 32; i++) ((char *)status_c)[i] = status_z[i];
  long long n = fact_int(in, "n"), e = fact_int(in, "e");
  for (long long i = 0; i < n; i++) {
    pg_buf r = {0}, t = {0};
    pg_buf_add(&r, "Reason");
    pg_buf_add_int(&r, i);
    pg_buf_addn(&r, "", 1); /* NUL: reasons are C strings */
    if (msg.ptr) pg_buf_add_str(&t, msg);
    pg_buf_add_int(&t, i);
    pg_health_entry(h, status_c, r.ptr, pg_buf_str(&t), pg_input_fact(in, "fs"));
  }
  for (long long i = 0; i < e; i++) {
    pg_buf f = {0}, t = {0};
    pg_buf_add(&f, "fs");
    pg_buf_add_int(&f, i);
    pg_buf_add(&t, "fs-OST");
    pg_buf_add_int(&t, i);
    pg_health_event(h, "Evicted", pg_buf_str(&f), pg_buf_str(&t), i == 0 ? -1 : i);
  }
  if (fact_int(in, "stable") == 1) pg_health_stable(h);
  return h;
}
