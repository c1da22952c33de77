// SPDX-License-Identifier: MIT
//
// header_use.cpp - every call of <blackbox.hpp>, each overload, as a
// program uses them: compiled (not run) by header_strict.sh with strict
// warnings (-Wold-style-cast, -Wzero-as-null-pointer-constant,
// -Wuseless-cast ...), C++17 and C++20, which must find nothing to say.
#include <blackbox.hpp>

#include <iostream>
#include <string>

int bbt_use_cxx(std::int64_t v, unsigned u, double d, const std::string &s, std::string_view sv);

int bbt_use_cxx(std::int64_t v, unsigned u, double d, const std::string &s, std::string_view sv)
{
	blackbox::options o{};
	int r;

	o.flags = BB_OPT_CRASH_HANDLER;
	r = blackbox::init(o);
	r |= blackbox::init();
	r |= blackbox::init(std::size_t{ 1 } << 20);
	r |= blackbox::thread_init();
	r |= blackbox::write("literal");
	r |= blackbox::write(s);
	r |= blackbox::write(sv);
	r |= blackbox::write(v);
	r |= blackbox::write(u);
	r |= blackbox::write(42);
	r |= blackbox::write(42ull);
	r |= blackbox::write(d);
	r |= blackbox::write(1.5f);
	r |= blackbox::write(true);
	r |= blackbox::write("k", "v");
	r |= blackbox::write("k", s);
	r |= blackbox::write(sv, sv);
	r |= blackbox::write("k", v);
	r |= blackbox::write("k", u);
	r |= blackbox::write(s, 7);
	r |= blackbox::write("k", d);
	r |= blackbox::write("k", false);
	r |= blackbox::write_important("k", sv);
	r |= blackbox::event("request", { { "path", s }, { "status", 200 }, { "bytes", u },
					  { "ms", d }, { "ok", true }, { "lit", "text" } });
	r |= blackbox::event_important("fatal", { { "why", sv } });
	r |= blackbox::event("none", {});
	r |= blackbox::set("config", "v3");
	r |= blackbox::set(sv, s);
	r |= blackbox::set("n", v);
	r |= blackbox::set("u", u);
	r |= blackbox::set("d", d);
	r |= blackbox::set("b", true);
	r |= blackbox::unset("b");
	r |= blackbox::dump(std::cerr);
	r |= blackbox::install_terminate_handler();
	r |= blackbox::crash_record("reason");
	r |= blackbox::close();
	return r;
}
