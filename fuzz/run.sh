#!/bin/sh
# fuzz/run.sh [SECONDS] - build the libFuzzer target with clang and fuzz the
# box parser for SECONDS (default 60), starting from fuzz/corpus.  New inputs
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
	"$here/fuzz_reader.c" "$root"/libblackbox/reader*.c "$root/libblackbox/names.c" \
	"$root/libblackbox/escape.c" "$root/libblackbox/value.c" "$root/libblackbox/crc32c.c" \
	"$root"/shared/*.c \
	-o "$out/fuzz_reader"
cd "$out"
exec ./fuzz_reader -max_total_time="$secs" -max_len=65536 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 "$out/corpus" "$here/corpus"
