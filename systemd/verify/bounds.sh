#!/bin/sh
# SPDX-License-Identifier: MIT
# Description: the bb-reap units keep their bounds and their hardening.
#   - MemoryMax= is set in each, so that no run can grow without limit;
#     the oneshot service (the timer's) has TimeoutStartSec= (RuntimeMaxSec=
#     would not apply), the --watch service Restart=on-failure;
#   - `systemd-analyze security --offline` rates each one's exposure at
#     most 2.0 (every remaining exposure explained in the unit): a change
#     that loosens the sandbox fails here;
#   - all have the same sandbox, word for word, from "# Archives:" to
#     their [Install] section or end: a setting loosened or tightened in
#     one only fails here.
set -eu
analyze=${1:?usage: bounds.sh SYSTEMD-ANALYZE UNIT [UNIT...]}
shift
[ $# -ge 1 ] || { echo "usage: bounds.sh SYSTEMD-ANALYZE UNIT [UNIT...]" >&2; exit 2; }
fail() { echo "bounds.sh: $*" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bounds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# from "# Archives:" to [Install] or the end, without trailing empty lines
sandbox() {
	sed -n '/^# Archives:/,/^\[Install\]/p' "$1" | grep -v '^\[Install\]' |
		awk 'NF { while (blank) { print ""; blank-- } print; next } { blank++ }'
}
first=
for unit in "$@"; do
	grep -Eq '^MemoryMax=[0-9]+[KMG]?$' "$unit" || fail "$unit: no MemoryMax="
	if grep -q '^Type=oneshot$' "$unit"; then
		grep -Eq '^TimeoutStartSec=[0-9]+(s|min|h)?$' "$unit" ||
			fail "$unit: no TimeoutStartSec="
	else
		grep -q '^Restart=on-failure$' "$unit" ||
			fail "$unit: not Type=oneshot and no Restart=on-failure"
	fi
	out=$("$analyze" security --offline=true --threshold=20 "$unit" 2>&1) || {
		printf '%s\n' "$out" >&2
		fail "$unit: exposure above 2.0"
	}
	printf '%s: %s\n' "$(basename "$unit")" "$(printf '%s\n' "$out" | tail -n 1)"
	sandbox "$unit" > "$tmp/this"
	[ -s "$tmp/this" ] || fail "$unit: no sandbox section (# Archives: ...)"
	if [ -z "$first" ]; then
		first=$unit
		cp "$tmp/this" "$tmp/first"
	elif ! cmp -s "$tmp/first" "$tmp/this"; then
		diff -u "$tmp/first" "$tmp/this" >&2 || true
		fail "$unit: its sandbox differs from $first's"
	fi
done
