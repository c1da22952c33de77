// SPDX-License-Identifier: MIT
//
// Description: <blackbox.hpp>, the C++17 API, writes exactly the records of
// the C calls it stands for (each overload the C call of its type: a
// literal is text, never bool; a signed integer i64, an unsigned u64),
// takes strings without a terminator, sets the state table, and dumps the
// box into a std::ostream.
#include <criterion/criterion.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <blackbox.hpp>
#include <blackbox/reader.h>

#include "../helpers/common.h"

TestSuite(cxx, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 60);

namespace {

struct rec {
	uint8_t tag, flags;
	std::vector<uint8_t> value;
};

int collect(const struct bb_record *r, void *arg)
{
	auto *v = static_cast<std::vector<rec> *>(arg);

	if (r->tag == BB_TAG_OWNER)
		return 0;
	v->push_back(rec{ r->tag, r->flags, std::vector<uint8_t>(r->value, r->value + r->value_len) });
	return 0;
}

std::vector<rec> records()
{
	char path[4096], err[256];
	struct bb_reader *r;
	std::vector<rec> v;

	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_walk(r, 0, collect, &v), 0);
	bb_reader_close(r);
	return v;
}

struct bb_field cfield(const char *k, enum bb_type t)
{
	struct bb_field f;

	std::memset(&f, 0, sizeof(f));
	f.key = k;
	f.type = t;
	return f;
}

} // namespace

// Each C++ call is followed by the C call it stands for: the two records
// must be the same bytes.
Test(cxx, every_call_writes_the_c_calls_record)
{
	const char key[] = { 'k', 'e', 'y', '!' };           // no terminator
	const char val[] = { 'v', '\0', 'w' };
	const std::string k70(70, 'k'), v70(70, 'v');
	std::string s = "/index";
	struct bb_field f[6];
	size_t pairs = 0;

	cr_assert_eq(blackbox::init(), 0);
#define PAIR(cxx, c)                                  \
	do {                                          \
		cr_assert_eq((cxx), 0, "%s", #cxx);   \
		cr_assert_eq((c), 0, "%s", #c);       \
		pairs++;                              \
	} while (0)
	PAIR(blackbox::write("text"), bb_write_str("text"));
	PAIR(blackbox::write(std::string_view(key, 3)), bb_write_str("key"));
	PAIR(blackbox::write(std::string_view(val, 3)), bb_write_strn(val, 3));
	PAIR(blackbox::write(std::string_view()), bb_write_str(""));
	PAIR(blackbox::write(s), bb_write_str("/index"));
	PAIR(blackbox::write(42), bb_write_i64(42));
	PAIR(blackbox::write(-1L), bb_write_i64(-1));
	PAIR(blackbox::write(static_cast<signed char>(-3)), bb_write_i64(-3));
	PAIR(blackbox::write(42u), bb_write_u64(42));
	PAIR(blackbox::write(UINT64_MAX), bb_write_u64(UINT64_MAX));
	PAIR(blackbox::write(2.5f), bb_write_f64(2.5));
	PAIR(blackbox::write(true), bb_write_bool(true));
	PAIR(blackbox::write("k", "v"), bb_write_kv("k", "v"));
	PAIR(blackbox::write("path", s), bb_write_kv("path", "/index"));
	PAIR(blackbox::write(std::string_view(), std::string_view()), bb_write_kv("", ""));
	PAIR(blackbox::write(std::string_view(), 1), bb_write_kv_i64("", 1));
	PAIR(blackbox::write(std::string_view(key, 3), std::string_view(val, 3)),
	     bb_write_kvn("key", 3, val, 3));
	PAIR(blackbox::write(std::string_view(key, 3), 7), bb_write_kv_i64("key", 7));
	PAIR(blackbox::write("n", -5LL), bb_write_kv_i64("n", -5));
	PAIR(blackbox::write("n", 5u), bb_write_kv_u64("n", 5));
	PAIR(blackbox::write("x", 0.25), bb_write_kv_f64("x", 0.25));
	PAIR(blackbox::write("b", false), bb_write_kv_bool("b", false));
	PAIR(blackbox::write(k70, v70), bb_write_kv(k70.c_str(), v70.c_str()));
	PAIR(blackbox::write(k70, 1), bb_write_kv_i64(k70.c_str(), 1));
	PAIR(blackbox::write(k70, 1u), bb_write_kv_u64(k70.c_str(), 1));
	PAIR(blackbox::write(k70, 1.0), bb_write_kv_f64(k70.c_str(), 1.0));
	PAIR(blackbox::write_important("imp", std::string_view(val, 3)),
	     bb_write_kvn_important("imp", 3, val, 3));
	f[0] = cfield("method", BB_TYPE_STR);
	f[0].v.s = "GET";
	f[1] = cfield("path", BB_TYPE_STR);
	f[1].v.s = "/index";
	f[2] = cfield("status", BB_TYPE_I64);
	f[2].v.i64 = 200;
	f[3] = cfield("bytes", BB_TYPE_U64);
	f[3].v.u64 = 4096;
	f[4] = cfield("ms", BB_TYPE_F64);
	f[4].v.f64 = 1.5;
	f[5] = cfield("cached", BB_TYPE_BOOL);
	f[5].v.b = false;
	PAIR(blackbox::event("http", { { "method", "GET" }, { "path", s }, { "status", 200 },
				      { "bytes", 4096u }, { "ms", 1.5 }, { "cached", false } }),
	     bb_write_event("http", f, 6));
	PAIR(blackbox::event("none", {}), bb_write_event("none", f, 0));
	PAIR(blackbox::event_important("http", { { "method", "GET" }, { "path", s } }),
	     bb_write_event_important("http", f, 2));
	PAIR(blackbox::event("empty", { { "method", std::string_view() } }),
	     bb_write_event("empty", (f[0].v.s = "", f), 1));
#undef PAIR

	// NULL strings keep the C calls' -EINVAL.
	cr_assert_eq(blackbox::write(static_cast<const char *>(nullptr)), -EINVAL);
	cr_assert_eq(blackbox::write("k", static_cast<const char *>(nullptr)), -EINVAL);
	cr_assert_eq(blackbox::event("e", { { "k", static_cast<const char *>(nullptr) } }), -EINVAL);
	cr_assert_eq(blackbox::event(nullptr, {}), -EINVAL);

	std::vector<rec> v = records();
	cr_assert_eq(v.size(), 2 * pairs, "%zu records for %zu pairs", v.size(), pairs);
	for (size_t i = 0; i < v.size(); i += 2) {
		cr_assert_eq(v[i].tag, v[i + 1].tag, "pair %zu: tag", i / 2);
		cr_assert_eq(v[i].flags, v[i + 1].flags, "pair %zu: flags", i / 2);
		cr_assert(v[i].value == v[i + 1].value, "pair %zu: value bytes differ", i / 2);
	}
	cr_assert_eq(v[0].tag, BB_TAG_STR, "a literal is text");
	cr_assert_eq(v[10].tag, BB_TAG_I64, "an int is i64");
	cr_assert_eq(v[16].tag, BB_TAG_U64, "an unsigned is u64");
	cr_assert_eq(v[22].tag, BB_TAG_BOOL, "true is bool");
	cr_assert_eq(blackbox::close(), 0);
}

namespace {

struct state_val {
	std::string key;
	std::vector<uint8_t> value;   // the CBOR [key, value] item
};

int state_cb(const struct bb_state_entry *e, void *arg)
{
	auto *v = static_cast<std::vector<state_val> *>(arg);

	cr_assert_eq(e->status, BB_SLOT_OK);
	v->push_back(state_val{ std::string(e->key, e->key_len),
				std::vector<uint8_t>(e->value, e->value + e->value_len) });
	return 0;
}

// The value bytes of @key (after the array head and the 2-byte key).
std::vector<uint8_t> state_of(const std::vector<state_val> &v, const char *key)
{
	for (const state_val &s : v)
		if (s.key == key)
			return std::vector<uint8_t>(s.value.begin() + 4, s.value.end());
	cr_assert_fail("no state key %s", key);
	return {};
}

} // namespace

// set() with each value type is the C setter of that type; keys and text
// need no terminator; unset() removes.
Test(cxx, set_is_the_c_setter)
{
	const char key[] = { 'x', '1', '?' };
	char path[4096], err[256];
	struct bb_reader *r;
	std::vector<state_val> v;

	cr_assert_eq(blackbox::init(), 0);
	cr_assert_eq(blackbox::set(std::string_view(key, 2), std::string_view("r-17 and", 4)), 0);
	cr_assert_eq(bb_set("c1", "r-17"), 0);
	cr_assert_eq(blackbox::set("x2", -5), 0);
	cr_assert_eq(bb_set_i64("c2", -5), 0);
	cr_assert_eq(blackbox::set("x3", 5u), 0);
	cr_assert_eq(bb_set_u64("c3", 5), 0);
	cr_assert_eq(blackbox::set("x4", 0.5), 0);
	cr_assert_eq(bb_set_f64("c4", 0.5), 0);
	cr_assert_eq(blackbox::set("x5", true), 0);
	cr_assert_eq(bb_set_bool("c5", true), 0);
	cr_assert_eq(blackbox::set("x6", "text"), 0);
	cr_assert_eq(bb_set("c6", "text"), 0);
	cr_assert_eq(blackbox::set("gone", 1), 0);
	cr_assert_eq(blackbox::unset("gone"), 0);
	cr_assert_eq(blackbox::unset("never"), -ENOENT);
	cr_assert_eq(blackbox::set(std::string(BB_STATE_KEY_MAX + 1, 'k'), 1), -E2BIG);

	cr_assert_gt(bb_path(path, sizeof(path)), 0);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_state(r, state_cb, &v, nullptr), 0);
	bb_reader_close(r);
	cr_assert_eq(v.size(), 12, "%zu keys", v.size());
	for (const char *k : { "1", "2", "3", "4", "5", "6" })
		cr_assert(state_of(v, (std::string("x") + k).c_str()) ==
				  state_of(v, (std::string("c") + k).c_str()),
			  "x%s and c%s differ", k, k);
	cr_assert_eq(blackbox::close(), 0);
}

// dump() writes bb_dump()'s text into the stream.
Test(cxx, dump_into_a_stream)
{
	std::ostringstream os;

	cr_assert_eq(blackbox::dump(os), -ENODEV, "no box yet");
	cr_assert_eq(blackbox::init(), 0);
	cr_assert_eq(blackbox::write("status", 200), 0);
	for (int i = 0; i < 300; i++)            // more than one 4 KiB read
		cr_assert_eq(blackbox::write("line", i), 0);
	cr_assert_eq(blackbox::dump(os), 0);
	cr_assert_gt(os.str().size(), 8192u);
	cr_assert_neq(os.str().find("status=200"), std::string::npos, "%s", os.str().c_str());
	cr_assert_neq(os.str().find("line=299"), std::string::npos);
	cr_assert_eq(blackbox::close(), 0);
}

Test(cxx, thread_init_is_the_c_call)
{
	std::thread t;
	int in_thread = 1;

	cr_assert_eq(blackbox::thread_init(), -ENODEV, "no box yet, as bb_thread_init()");
	cr_assert_eq(blackbox::init(), 0);
	cr_assert_eq(blackbox::thread_init(), 0);
	t = std::thread([&in_thread] { in_thread = blackbox::thread_init(); });
	t.join();
	cr_assert_eq(in_thread, 0);
	cr_assert_eq(blackbox::close(), 0);
}
