/*
 * net-interfaces, ported from plugins/net-interfaces/index.ts (AssemblyScript)
 * to C on ABI v2: the same fixtures, the same verdicts, word for word.
 * Are the network interfaces LNet uses operationally up? `unknown` passes:
 * virtual and tunnel devices (and many VM NICs) never report carrier state,
 * so treating it as down would fail healthy nodes; the message names them.
 * Configuration (net-interfaces-c.yaml):
 *   ignoreInterfaces: [eth1]
 */
#include "probegate.h"

#define SOURCE "sys.net.operstate"
#define FACT "lnet.interfaces"

/* An empty list from lnet-nets: LNet, configured at the first mount, names no interface yet. */
static int names_none(pg_str list) {
  for (size_t i = 0; i < list.len; i++) {
    char c = list.ptr[i];
    if (c != ',' && c != ' ' && c != '\t' && c != '\n' && c != '\r') return 0;
  }
  return 1;
}

pg_manifest_builder *probegate_manifest(void) {
  pg_manifest_builder *m = pg_manifest_new("net-interfaces-c", "1.2.0", "network interfaces used by LNet are operationally up");
  pg_manifest_source(m, SOURCE);
  return pg_manifest_strings_option(m, "ignoreInterfaces", 0, 0, "interfaces whose state is not checked, e.g. [eth1]");
}

pg_verdict *probegate_check(const pg_input *in) {
  pg_str listed = pg_input_fact(in, FACT);
  if (listed.ptr && names_none(listed)) return pg_pass("NoInterfacesNamed", pg_cstr("LNet names no interface yet (lnet.interfaces is empty, lnetConfiguredAt: mount): none to check until it is configured"));
  pg_opened o = pg_open_source(in, SOURCE);
  if (o.failure) return o.failure;
  pg_strs ignore = pg_config_strings(in, "ignoreInterfaces", 0, 0);
  pg_strs ignored = {0}, up = {0}, unknown = {0}, bad = {0};
  pg_str line, f[2];
  size_t pos = 0;
  long long line_no = 0;
  while (pg_next_line(o.text, &pos, &line)) {
    line_no++;
    size_t n = pg_fields(line, f, 2);
    if (n == 0) continue;
    if (n != 2 || !pg_is_valid_if_name(f[0])) {
      pg_buf why = {0};
      pg_buf_add(&why, "expected `IFACE STATE` on line ");
      pg_buf_add_int(&why, line_no);
      pg_buf_add(&why, ": ");
      pg_buf_add_str(&why, pg_clip(pg_one_line(line), 60));
      return pg_parse_error(o.source, pg_buf_str(&why));
    }
    if (pg_strs_has(&ignore, f[0])) pg_strs_push(&ignored, f[0]);
    else if (pg_str_is(f[1], "up")) pg_strs_push(&up, f[0]);
    else if (pg_str_is(f[1], "unknown")) pg_strs_push(&unknown, f[0]);
    else {
      pg_buf b = {0};
      pg_buf_add_str(&b, f[0]);
      pg_buf_add(&b, " (");
      pg_buf_add_str(&b, pg_clip(f[1], 20));
      pg_buf_add(&b, ")");
      pg_strs_push(&bad, pg_buf_str(&b));
    }
  }
  if (up.len + unknown.len + bad.len + ignored.len == 0) return pg_parse_error(o.source, pg_cstr("no interfaces listed"));
  pg_buf note = {0};
  if (ignored.len) {
    pg_buf_add(&note, "; ignored by configuration: ");
    pg_buf_add_str(&note, pg_human_list(&ignored, 10));
  }
  pg_buf msg = {0};
  if (bad.len) {
    pg_buf_add(&msg, "interface(s) not up: ");
    pg_buf_add_str(&msg, pg_human_list(&bad, 10));
    pg_buf_add_str(&msg, pg_buf_str(&note));
    return pg_fail("InterfaceDown", pg_buf_str(&msg));
  }
  if (up.len + unknown.len == 0) {
    pg_buf_add(&msg, "every listed interface is ignored by configuration: ");
    pg_buf_add_str(&msg, pg_human_list(&ignored, 10));
    return pg_pass("InterfacesIgnored", pg_buf_str(&msg));
  }
  pg_strs all = {0};
  for (size_t i = 0; i < up.len; i++) pg_strs_push(&all, up.items[i]);
  for (size_t i = 0; i < unknown.len; i++) pg_strs_push(&all, unknown.items[i]);
  pg_buf_add(&msg, "interface(s) up: ");
  pg_buf_add_str(&msg, pg_human_list(&all, 10));
  if (unknown.len) {
    pg_buf_add(&msg, "; operstate unknown (counted as up): ");
    pg_buf_add_str(&msg, pg_human_list(&unknown, 10));
  }
  pg_buf_add_str(&msg, pg_buf_str(&note));
  return pg_pass("InterfacesUp", pg_buf_str(&msg));
}
