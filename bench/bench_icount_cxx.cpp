// SPDX-License-Identifier: MIT
//
// bench_icount_cxx.cpp - bench_icount.c's protocol for <blackbox.hpp>: the
// C++ calls whose instruction counts tests/perf/icount_budget.sh compares
// with the C calls they stand for (they must be equal: the C++ API adds
// nothing).
//
// Usage: bench_icount_cxx OP N
//   OP: cxxkv     blackbox::write(key, value), two std::string_views of
//                 literals (C: kv, bb_write_kv() of the literals)
//       cxxkvrun  the same with views known only at run time, lengths
//                 given (C: kvnrun, bb_write_kvn())
//       cxxkvi64  blackbox::write("n", int64) (C: kvi64)
//       cxxckv, cxxckvnrun, cxxckvi64  the C calls of kv, kvnrun and
//                 kvi64 compiled here, as C++
//
// bb_init(0), a warm-up that claims the ring and wraps it, then N calls in
// loop_<OP>(), which callgrind collects alone (--toggle-collect=loop_*).
#include <blackbox.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

constexpr unsigned warmup = 20000;

// Not constants to the compiler: read anew on every call (as in
// bench_icount.c).
const char *volatile dyn_key = "req";
const char *volatile dyn_value = "GET /index";
volatile std::size_t dyn_klen = 3, dyn_vlen = 10;

} // namespace

#define NOINLINE __attribute__((noinline, noclone))

// C linkage: callgrind's --toggle-collect=loop_* matches the names as
// they are, unmangled.
#define DEFINE_OP(name, body)                                            \
	NOINLINE static void warm_##name(unsigned n)                     \
	{ for (unsigned i = 0; i < n; i++) { body; } }                   \
	NOINLINE static void loop_##name(unsigned n)                     \
	{ for (unsigned i = 0; i < n; i++) { body; } }

using namespace std::literals;

extern "C" {
DEFINE_OP(cxxkv, blackbox::write("req"sv, "GET /index"sv))
DEFINE_OP(cxxkvrun, blackbox::write(std::string_view(dyn_key, dyn_klen),
				    std::string_view(dyn_value, dyn_vlen)))
DEFINE_OP(cxxkvi64, blackbox::write("n"sv, 1000 + static_cast<std::int64_t>(i)))
DEFINE_OP(cxxckv, bb_write_kv("req", "GET /index"))
DEFINE_OP(cxxckvnrun, bb_write_kvn(dyn_key, dyn_klen, dyn_value, dyn_vlen))
DEFINE_OP(cxxckvi64, bb_write_kv_i64("n", 1000 + static_cast<std::int64_t>(i)))
}

namespace {

const struct {
	const char *name;
	void (*warm)(unsigned);
	void (*fn)(unsigned);
} ops[] = {
	{ "cxxkv", warm_cxxkv, loop_cxxkv },
	{ "cxxkvrun", warm_cxxkvrun, loop_cxxkvrun },
	{ "cxxkvi64", warm_cxxkvi64, loop_cxxkvi64 },
	{ "cxxckv", warm_cxxckv, loop_cxxckv },
	{ "cxxckvnrun", warm_cxxckvnrun, loop_cxxckvnrun },
	{ "cxxckvi64", warm_cxxckvi64, loop_cxxckvi64 },
};

} // namespace

int main(int argc, char **argv)
{
	void (*warm)(unsigned) = nullptr, (*fn)(unsigned) = nullptr;
	unsigned long n;
	int ret;

	if (argc != 3) {
		std::fprintf(stderr, "usage: bench_icount_cxx cxxkv|cxxkvrun|cxxkvi64|cxxckv|cxxckvnrun|cxxckvi64 N\n");
		return 2;
	}
	for (const auto &op : ops)
		if (!std::strcmp(argv[1], op.name)) {
			warm = op.warm;
			fn = op.fn;
		}
	n = std::strtoul(argv[2], nullptr, 10);
	if (!fn || !n) {
		std::fprintf(stderr, "bench_icount_cxx: bad operation or count\n");
		return 2;
	}
	ret = blackbox::init();
	if (ret < 0) {
		std::fprintf(stderr, "blackbox::init: %s\n", std::strerror(-ret));
		return 1;
	}
	warm(warmup);
	fn(static_cast<unsigned>(n));
	return 0;
}
