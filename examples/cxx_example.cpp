// SPDX-License-Identifier: MIT
//
// cxx_example.cpp - libblackbox from C++: both public headers compile as
// C++ (extern "C", no C-only constructs), and a box is written and read
// back.  The writes below take the inline paths of <blackbox/inline.h>
// (g++ and clang++ on x86-64), as in C.  Run with a private BLACKBOX_DIR.
//
//   bb-cxx-example [EXPECTED_VERSION]
#include <blackbox.h>
#include <blackbox/reader.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

struct count {
	int kv = 0, events = 0;
};

int on_record(const bb_record *rec, void *arg)
{
	count *c = static_cast<count *>(arg);
	char line[256];

	if (bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len,
			    line, sizeof(line)) < 0)
		return -EBADMSG;
	std::string tag = bb_tag_name(rec->tag);
	if (tag == "kv")
		c->kv++;
	else if (tag == "event")
		c->events++;
	std::printf("%-5s %s\n", tag.c_str(), line);
	return 0;
}

int fail(const char *what, int ret)
{
	std::fprintf(stderr, "%s: %s\n", what, std::strerror(-ret));
	return 1;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc > 1 && std::string(argv[1]) != bb_version()) {
		std::fprintf(stderr, "bb_version() %s, expected %s\n", bb_version(), argv[1]);
		return 1;
	}
	if (bb_version_number() != BB_VERSION_MAJOR * 10000 + BB_VERSION_MINOR * 100 + BB_VERSION_PATCH)
		return 1;

	int ret = bb_init(0);
	if (ret < 0)
		return fail("bb_init", ret);
	bb_write_kv("lang", "c++");
	std::string who = "example";
	bb_write_kv("who", who.c_str());   // known only at run time
	bb_write_kv_i64("answer", 42);

	// No compound literals in C++: set the members.
	bb_field f[2];
	f[0].key = "path";
	f[0].type = BB_TYPE_STR;
	f[0].v.s = "/api/orders";
	f[1].key = "status";
	f[1].type = BB_TYPE_I64;
	f[1].v.i64 = 200;
	if ((ret = bb_write_event("request", f, 2)) < 0)
		return fail("bb_write_event", ret);

	char path[4096];
	if ((ret = bb_path(path, sizeof(path))) < 0)
		return fail("bb_path", ret);

	bb_reader *r = nullptr;
	char err[256] = "";
	ret = bb_reader_open_path(path, BB_OPEN_SNAPSHOT, &r, err, sizeof(err));
	if (ret < 0) {
		std::fprintf(stderr, "bb_reader_open_path: %s\n", err);
		return 1;
	}
	count c;
	ret = bb_reader_walk(r, BB_WALK_MERGE, on_record, &c);
	bb_reader_close(r);
	bb_close();
	if (ret != 0)
		return fail("bb_reader_walk", ret);
	if (c.kv != 3 || c.events != 1) {
		std::fprintf(stderr, "read back %d kv and %d events, wrote 3 and 1\n", c.kv, c.events);
		return 1;
	}
	return 0;
}
