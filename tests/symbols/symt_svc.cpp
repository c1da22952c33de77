// SPDX-License-Identifier: MIT
//
// Description: a small C++ service for bb-extract's C++ symbol tests
// (check_cxx.py builds it with g++ and with clang++, -O2 -g): namespaces,
// a class template, lambdas and a thread pool, instrumented with the C API
// and the crash handler.  A request for a key the map does not hold makes
// a worker thread die of SIGSEGV in a member of a class template:
//
//   frame 0  kvsvc::store::ShardedMap<int, kvsvc::Entry>::value_length,
//            with kvsvc::store::ShardedMap<int, kvsvc::Entry>::find_length
//            and kvsvc::store::Shard<kvsvc::Entry>::length_of inlined
//            into it
//   frame 1  the lambda the request was submitted as, or the pool's
//            std::function invoker it is inlined into
//
//   symt_svc KEY     prints its pid, then looks KEY up (7 is missing)
//
// The lines the test expects carry a marker comment "@NAME"; the test
// reads their numbers from this file.
#include <blackbox.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <pthread.h>
#include <queue>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#ifdef __SANITIZE_ADDRESS__
// The crash handler's SIGSEGV is the subject, not ASan's.
extern "C" const char *__asan_default_options();
extern "C" const char *__asan_default_options()
{
	return "handle_segv=0:handle_sigbus=0:detect_leaks=0";
}
#endif

namespace kvsvc {

struct Entry {
	int key;
	std::size_t length;
	std::string text;
};

// What a lookup finds for a key that is not there: nullptr, but nothing
// the compiler may assume (a null dereference it can prove is undefined
// behaviour it may turn into anything but the load).
Entry *volatile missing = nullptr;

namespace store {

template <typename V> class Shard {
public:
	void put(V v) { items_.push_back(std::move(v)); }

	// The length of key @k's value, which must be there.
	__attribute__((always_inline)) inline std::size_t length_of(int k)
	{
		V *v = missing;

		for (V &x : items_)
			if (x.key == k)
				v = &x;
		return v->length; /* @CRASH_INLINE */
	}

private:
	std::vector<V> items_;
};

template <typename K, typename V> class ShardedMap {
public:
	void put(K k, V v) { shards_[static_cast<unsigned>(k) % 4].put(std::move(v)); }

	__attribute__((always_inline)) inline std::size_t find_length(K k)
	{
		return shards_[static_cast<unsigned>(k) % 4].length_of(k); /* @CALL_LENGTH_OF */
	}

	// The length of key @k's text: the caller is sure that it is there.
	__attribute__((noinline)) std::size_t value_length(K k)
	{
		std::size_t n = find_length(k); /* @CALL_FIND */
		__asm__ __volatile__("" ::: "memory"); // not a tail call
		return n;
	}

private:
	Shard<V> shards_[4];
};

} // namespace store

// A fixed pool of worker threads taking jobs off one queue.
class ThreadPool {
public:
	explicit ThreadPool(unsigned n)
	{
		for (unsigned i = 0; i < n; i++)
			workers_.emplace_back([this, i] { run(i); });
	}
	~ThreadPool()
	{
		{
			std::lock_guard<std::mutex> g(m_);
			done_ = true;
		}
		cv_.notify_all();
		for (std::thread &t : workers_)
			t.join();
	}
	void submit(std::function<void()> job)
	{
		{
			std::lock_guard<std::mutex> g(m_);
			jobs_.push(std::move(job));
		}
		cv_.notify_one();
	}

private:
	void run(unsigned i)
	{
		char name[16];

		std::snprintf(name, sizeof(name), "kv-worker-%u", i);
		pthread_setname_np(pthread_self(), name); // the ring takes it
		for (;;) {
			std::function<void()> job;
			{
				std::unique_lock<std::mutex> l(m_);
				cv_.wait(l, [this] { return done_ || !jobs_.empty(); });
				if (jobs_.empty())
					return;
				job = std::move(jobs_.front());
				jobs_.pop();
			}
			job();
		}
	}

	std::vector<std::thread> workers_;
	std::queue<std::function<void()>> jobs_;
	std::mutex m_;
	std::condition_variable cv_;
	bool done_ = false;
};

} // namespace kvsvc

int main(int argc, char **argv)
{
	bb_options o{};
	o.flags = BB_OPT_CRASH_HANDLER;
	o.size = 1 << 20;
	int rc = bb_init_opts(&o);

	if (rc || argc < 2) {
		std::fprintf(stderr, "usage: symt_svc KEY (bb_init: %d)\n", rc);
		return 2;
	}
	std::printf("%d\n", static_cast<int>(getpid()));
	std::fflush(stdout);

	kvsvc::store::ShardedMap<int, kvsvc::Entry> map;
	for (int k = 0; k < 6; k++)
		map.put(k, kvsvc::Entry{k, static_cast<std::size_t>(k) + 1, std::string("x")});
	int key = std::atoi(argv[1]);
	kvsvc::ThreadPool pool(2);
	for (int k = 0; k < 3; k++) {
		pool.submit([&map, k] {
			bb_write_kv_i64("length", static_cast<int64_t>(map.value_length(k)));
		});
	}
	pool.submit([&map, key] {
		bb_write_kv_i64("key", key);
		std::size_t n = map.value_length(key); /* @CALL_MEMBER */
		bb_write_kv_i64("length", static_cast<int64_t>(n));
	});
	return 0;
}
