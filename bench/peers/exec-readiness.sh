#!/bin/bash
# Peer (c): an exec-style readiness probe, as kubelet runs it (exec, every
# period), doing what the reference Lustre CSI driver's readiness script does:
# `lnetctl net show` must succeed, at least one `nid:` line, `lnetctl ping` of
# the first non-@lo NID within 10 s, at least one `status: up` line. (Like the
# original, the last test passes on the always-up 0@lo NI.) Written for this
# benchmark; lnetctl is whatever is first on PATH (fakes in the bench).

if ! lnetctl net show >/dev/null 2>&1; then
  echo "LNet is not configured"
  exit 1
fi

nid_count=$(lnetctl net show 2>/dev/null | grep -c "nid:")
if [ "$nid_count" -lt 1 ]; then
  echo "no NIDs configured"
  exit 1
fi

first_nid=$(lnetctl net show 2>/dev/null | grep "nid:" | grep -v "@lo" | head -n 1 | awk '{print $NF}')
if [ -n "$first_nid" ]; then
  if ! timeout 10 lnetctl ping "$first_nid" >/dev/null 2>&1; then
    echo "self-ping of $first_nid failed"
    exit 1
  fi
fi

if ! lnetctl net show 2>/dev/null | grep -q "status: up"; then
  echo "no NI is up"
  exit 1
fi

echo "ready"
exit 0
