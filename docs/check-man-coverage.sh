#!/bin/sh
# check-man-coverage.sh MAP MANDIR - every symbol the version script exports
# has a section-3 page (a page of its own or a .so alias); bb__* data
# symbols are the inline fast path's ABI, not API (blackbox/inline.h), and
# are described in bb_write_kv(3) instead.  Exit 1 naming
# each missing page.
set -eu
map=$1 dir=$2
missing=0
for sym in $(sed -n 's/^[[:space:]]*\(bb_[a-z0-9][a-z0-9_]*\);.*/\1/p' "$map"); do
	if [ ! -f "$dir/$sym.3" ]; then
		echo "no man page for exported symbol $sym ($dir/$sym.3)"
		missing=1
	fi
done
exit $missing
