#!/bin/sh
# fuzz/run.sh [SECONDS] - build the libFuzzer targets with clang and fuzz the
# box parser for SECONDS (default 60), starting from fuzz/corpus, then the
# journal entry's fields as bb-extract shows them (fuzz_jentry.c, from
# fuzz/corpus-jentry) and the CBOR decoder against libcbor (fuzz_cbor.c),
# each for a third of that.  New inputs
# go to a scratch corpus, never into the repository; a crash leaves its
# reproducer in build-fuzz/ and makes this script fail.
set -eu
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BUILD_FUZZ:-$root/build-fuzz}
mkdir -p "$out/corpus"
clang -g -O1 -std=gnu11 -D_GNU_SOURCE \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$root/include" -I"$root/libblackbox" \
	"$here/fuzz_reader.c" "$root"/libblackbox/reader*.c "$root/libblackbox/proc.c" "$root/libblackbox/names.c" \
	"$root/libblackbox/escape.c" "$root/libblackbox/value.c" "$root/libblackbox/crc32c.c" \
	"$root"/shared/*.c \
	-o "$out/fuzz_reader"
clang -g -O1 -std=gnu11 -D_GNU_SOURCE \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$root/include" -I"$root/libblackbox" \
	"$here/fuzz_cbor.c" "$root"/libblackbox/value.c "$root/libblackbox/escape.c" \
	"$root/libblackbox/names.c" "$root"/shared/*.c -lcbor \
	-o "$out/fuzz_cbor"
clang -g -O1 -std=gnu11 -D_GNU_SOURCE \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$root/include" -I"$root/tools/common" -I"$root/extractor" \
	"$here/fuzz_jentry.c" "$root/extractor/journal-field.c" \
	"$root/tools/common/emit.c" "$root/tools/common/emit_fast.c" "$root/tools/common/json.c" \
	"$root/tools/common/cbor_out.c" "$root/tools/common/fmt.c" "$root/tools/common/out.c" \
	"$root/tools/common/msg.c" "$root/libblackbox/escape.c" "$root/libblackbox/value.c" \
	"$root/libblackbox/names.c" "$root"/shared/*.c \
	-o "$out/fuzz_jentry"
mkdir -p "$out/corpus-cbor" "$out/corpus-jentry"
cd "$out"
# the journal entry's fields: inputs past the 64 KiB output buffer
./fuzz_jentry -max_total_time=$((secs / 3 + 1)) -max_len=200000 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 "$out/corpus-jentry" "$here/corpus-jentry"
./fuzz_reader -max_total_time="$secs" -max_len=65536 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 "$out/corpus" "$here/corpus"
exec ./fuzz_cbor -max_total_time=$((secs / 3 + 1)) -max_len=4096 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 "$out/corpus-cbor"
