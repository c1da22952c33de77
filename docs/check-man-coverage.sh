#!/bin/sh
# check-man-coverage.sh MAP MANDIR HEADER LIBDIR - the man pages cover the
# interface:
#  - every symbol the version script MAP exports has a section-3 page (a
#    page of its own or a .so alias); bb__* data symbols are the inline
#    fast path's ABI, not API (blackbox/inline.h), and are described in
#    bb_write_kv(3) instead;
#  - every member of struct bb_options (HEADER, <blackbox.h>) is in
#    bb_init(3)'s synopsis and described there (.I member);
#  - every BB_OPT_* flag of HEADER has an entry (.TP) in bb_init(3);
#  - every BLACKBOX_* environment variable the library reads (getenv() in
#    LIBDIR/*.c) has an entry (.TP) in bb_init(3) and blackbox(7).
# Exit 1 naming each thing missing.
set -eu
map=$1 dir=$2 header=$3 libdir=$4
missing=0
miss() { echo "$*"; missing=1; }

for sym in $(sed -n 's/^[[:space:]]*\(bb_[a-z0-9][a-z0-9_]*\);.*/\1/p' "$map"); do
	[ -f "$dir/$sym.3" ] || miss "no man page for exported symbol $sym ($dir/$sym.3)"
done

init=$dir/bb_init.3
members=$(sed -n '/^struct bb_options {/,/^};/p' "$header" |
	sed -n 's/^[[:space:]]*[a-z_][a-z_ ]*[ *]\([a-z_][a-z0-9_]*\);.*/\1/p')
[ -n "$members" ] || miss "no members of struct bb_options found in $header"
for m in $members; do
	grep -Eq "^\.BR? \"[[:space:]]+[^\"]*[ *]$m;" "$init" ||
		miss "struct bb_options member $m is not in bb_init(3)'s synopsis"
	grep -Eq "^\.IR? $m( |$)" "$init" ||
		miss "struct bb_options member $m is not described in bb_init(3) (.I $m)"
done

flags=$(sed -n 's/^#define \(BB_OPT_[A-Z0-9_]*\)[[:space:]].*/\1/p' "$header")
[ -n "$flags" ] || miss "no BB_OPT_* flags found in $header"
for f in $flags; do
	awk -v f="$f" 'prev == ".TP" && $0 == ".B " f { found = 1 }
		{ prev = $0 } END { exit !found }' "$init" ||
		miss "flag $f has no entry in bb_init(3) (.TP, .B $f)"
done

vars=$(cat "$libdir"/*.c | sed -n 's/.*getenv("\(BLACKBOX_[A-Z0-9_]*\)").*/\1/p' | sort -u)
[ -n "$vars" ] || miss "no getenv(\"BLACKBOX_...\") found in $libdir"
for v in $vars; do
	for page in "$init" "$dir/blackbox.7"; do
		# an entry of a tagged list (.TP, then the name): the ENVIRONMENT
		# section, not a mention in passing
		awk -v v="$v" 'prev == ".TP" && $1 ~ /^\.B[IR]?$/ &&
			($2 == v || index($2, v "=") == 1) { found = 1 }
			{ prev = $0 } END { exit !found }' "$page" ||
			miss "environment variable $v has no entry in $(basename "$page")"
	done
done
exit $missing
