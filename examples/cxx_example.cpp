// SPDX-License-Identifier: MIT
//
// cxx_example.cpp - libblackbox from C++ with <blackbox.hpp>: a small
// "service" records its configuration in the state table, its work as
// text, typed key/value pairs and one-line events, an important record,
// dumps its own box, and (with "crash") dies of an uncaught exception,
// which the box keeps: its type and what(), beside the crash record.
//
//   bb-cxx-example [EXPECTED_VERSION] [crash]
//
// Run with a private BLACKBOX_DIR; cxx-example.sh reads the box it leaves
// with bb-extract.
#include <blackbox.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace shop {

struct order {
	std::string id;
	std::string_view sku;
	unsigned quantity;
	double price;
};

// One request: the C calls' records, one line each.
int handle(const order &o)
{
	// The request as a span: ended when this scope is left, however.
	blackbox::span request("handle", { { "id", o.id } });
	int ret = blackbox::write("order", o.id);            // text value
	ret |= blackbox::write("quantity", o.quantity);      // u64
	ret |= blackbox::write("total", o.quantity * o.price); // f64
	ret |= blackbox::event("order.placed", { { "id", o.id }, { "sku", o.sku },
						 { "quantity", o.quantity },
						 { "price", o.price }, { "gift", false } });
	return ret;
}

} // namespace shop

int main(int argc, char **argv)
{
	const bool crash = argc > 2 && !std::strcmp(argv[2], "crash");
	blackbox::options opts{};
	int ret;

	if (argc > 1 && std::string_view(argv[1]) != bb_version()) {
		std::fprintf(stderr, "bb_version() %s, expected %s\n", bb_version(), argv[1]);
		return 1;
	}
	// The crash handler on: init() also installs the terminate handler.
	// Keep the box after exit, for bb-extract.
	opts.flags = BB_OPT_CRASH_HANDLER | BB_OPT_KEEP_ON_EXIT;
	if ((ret = blackbox::init(opts)) != 0) {
		std::fprintf(stderr, "blackbox::init: %s\n", std::strerror(-ret));
		return 1;
	}
	ret = blackbox::set("config.version", 3);
	ret |= blackbox::set("config.region", "eu-west");
	ret |= blackbox::write("shop starting");             // a text record
	ret |= blackbox::write(-1);                          // i64
	ret |= blackbox::write(true);                        // bool
	ret |= blackbox::write("retries", -2);               // key = i64
	ret |= blackbox::write("cache", true);               // key = bool
	ret |= shop::handle({ "o-1001", "BOOK-42", 2, 12.5 });
	ret |= shop::handle({ "o-1002", "PEN-7", 10, 0.99 });
	ret |= blackbox::write_important("audit", "price list reloaded");
	if (ret != 0) {
		std::fprintf(stderr, "a write failed: %s\n", std::strerror(-ret));
		return 1;
	}
	if ((ret = blackbox::dump(std::cout)) != 0) {
		std::fprintf(stderr, "blackbox::dump: %s\n", std::strerror(-ret));
		return 1;
	}
	std::cout.flush();
	if (crash)
		throw std::runtime_error("config missing: payment.gateway");
	return 0;
}
