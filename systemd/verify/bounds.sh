#!/bin/sh
# SPDX-License-Identifier: MIT
# Description: the bb-reap unit keeps its bounds and its hardening.
#   - MemoryMax= and TimeoutStartSec= (Type=oneshot: RuntimeMaxSec= would
#     not apply) are set, so that no run can grow or last without limit;
#   - `systemd-analyze security --offline` rates its exposure at most 2.0
#     (every remaining exposure explained in the unit): a change
#     that loosens the sandbox fails here.
set -eu
analyze=${1:?usage: bounds.sh SYSTEMD-ANALYZE UNIT}
unit=${2:?usage: bounds.sh SYSTEMD-ANALYZE UNIT}
fail() { echo "bounds.sh: $*" >&2; exit 1; }
grep -q '^Type=oneshot$' "$unit" || fail "not Type=oneshot: check which run-time limit applies"
grep -Eq '^MemoryMax=[0-9]+[KMG]?$' "$unit" || fail "no MemoryMax="
grep -Eq '^TimeoutStartSec=[0-9]+(s|min|h)?$' "$unit" || fail "no TimeoutStartSec="
out=$("$analyze" security --offline=true --threshold=20 "$unit" 2>&1) || {
	printf '%s\n' "$out" >&2
	fail "exposure above 2.0"
}
printf '%s\n' "$out" | tail -n 1
