/* SPDX-License-Identifier: MIT */
/*
 * Description: spans (bb_span_begin(), bb_span_begin_ctx(), bb_span_end())
 * write the records docs/FORMAT.md §6 "Spans" defines, read back through
 * the reader API: nesting depths per thread, fields, a flow id and a W3C
 * trace context; an end with nothing open is -EINVAL and writes nothing; a
 * signal handler's spans nest inside the span it interrupted; a begin
 * without a box still counts for the nesting; threads nest on their own;
 * spans 24 deep and more (the library's, not the inline path's) read the
 * same.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "../helpers/common.h"

TestSuite(span, .init = bbt_setup_dir, .fini = bbt_teardown_dir, .timeout = 60);

/* Each span record of the box as bb_format_value() renders it, "<tid>
 * <text>" per line, in time order. */
struct lines {
	char buf[16384];
	size_t n;
	int records;
	int32_t only_tid;
};

static int line_cb(const struct bb_record *rec, void *arg)
{
	struct lines *l = arg;
	int k;

	if (rec->tag != BB_TAG_SPAN_BEGIN && rec->tag != BB_TAG_SPAN_END)
		return 0;
	if (l->only_tid && rec->tid != l->only_tid)
		return 0;
	l->records++;
	k = bb_format_value(rec->tag, rec->flags, rec->value, rec->value_len, l->buf + l->n,
			    sizeof(l->buf) - l->n - 1);
	cr_assert(k > 0, "span record does not format: %d", k);
	l->n += (size_t)k;
	l->buf[l->n++] = '\n';
	l->buf[l->n] = '\0';
	return 0;
}

static void read_spans(struct lines *l, int32_t tid)
{
	char path[4096], err[256];
	struct bb_reader *r;

	memset(l, 0, sizeof(*l));
	l->only_tid = tid;
	cr_assert(bb_path(path, sizeof(path)) > 0);
	cr_assert_eq(bb_reader_open_path(path, 0, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bb_reader_walk(r, BB_WALK_MERGE, line_cb, l), 0);
	bb_reader_close(r);
}

Test(span, nested_spans_read_back_with_depths_and_fields)
{
	struct bb_field f[] = { BB_STR("table", "orders"), BB_I64("n", -3) };
	struct lines l;

	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_span_begin("request", NULL, 0), 0);
	cr_assert_eq(bb_span_begin("db.query", f, 2), 0);
	cr_assert_eq(bb_span_end(), 0);
	cr_assert_eq(bb_span_end(), 0);
	read_spans(&l, 0);
	cr_assert_str_eq(l.buf, "begin request depth=1\n"
				"begin db.query table=orders n=-3 depth=2\n"
				"end depth=2\n"
				"end depth=1\n");
	bb_close();
}

Test(span, an_end_with_nothing_open_is_einval_and_writes_nothing)
{
	struct lines l;

	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_span_end(), -EINVAL);
	cr_assert_eq(bb_span_begin("a", NULL, 0), 0);
	cr_assert_eq(bb_span_end(), 0);
	cr_assert_eq(bb_span_end(), -EINVAL);
	read_spans(&l, 0);
	cr_assert_eq(l.records, 2);
	bb_close();
}

Test(span, flow_id_and_trace_context_are_recorded)
{
	struct bb_span_ctx flow = { .flow = 458 }, trace = { 0 }, both;
	struct lines l;

	for (int i = 0; i < 16; i++)
		trace.trace_id[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < 8; i++)
		trace.span_id[i] = (uint8_t)(0x10 + i);
	both = trace;
	both.flow = 7;
	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_span_begin_ctx("a", NULL, 0, &flow), 0);
	cr_assert_eq(bb_span_begin_ctx("b", NULL, 0, &trace), 0);
	cr_assert_eq(bb_span_begin_ctx("c", NULL, 0, &both), 0);
	cr_assert_eq(bb_span_begin_ctx("d", NULL, 0, NULL), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(bb_span_end(), 0);
	read_spans(&l, 0);
	cr_assert_str_eq(l.buf,
		"begin a depth=1 flow=458\n"
		"begin b depth=2 trace=a0a1a2a3a4a5a6a7a8a9aaabacadaeaf-1011121314151617\n"
		"begin c depth=3 flow=7 trace=a0a1a2a3a4a5a6a7a8a9aaabacadaeaf-1011121314151617\n"
		"begin d depth=4\n"
		"end depth=4\nend depth=3\nend depth=2\nend depth=1\n");
	bb_close();
}

static void on_usr1(int sig)
{
	(void)sig;
	bb_span_begin("handler", NULL, 0);
	bb_span_end();
}

Test(span, a_signal_handlers_spans_nest_inside_the_interrupted_one)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct lines l;

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_span_begin("outer", NULL, 0), 0);
	raise(SIGUSR1);
	cr_assert_eq(bb_span_end(), 0);
	cr_assert_eq(bb_span_end(), -EINVAL);
	read_spans(&l, 0);
	cr_assert_str_eq(l.buf, "begin outer depth=1\nbegin handler depth=2\n"
				"end depth=2\nend depth=1\n");
	bb_close();
}

Test(span, a_begin_without_a_box_still_counts_for_the_nesting)
{
	struct lines l;

	cr_assert_neq(bb_span_begin("early", NULL, 0), 0); /* no box yet */
	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_span_begin("inner", NULL, 0), 0);
	cr_assert_eq(bb_span_end(), 0);
	cr_assert_eq(bb_span_end(), 0);   /* ends "early": no -EINVAL */
	cr_assert_eq(bb_span_end(), -EINVAL);
	read_spans(&l, 0);
	cr_assert_str_eq(l.buf, "begin inner depth=2\nend depth=2\nend depth=1\n");
	bb_close();
}

static void *nest3(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++)
		bb_span_begin("t", NULL, 0);
	for (int i = 0; i < 3; i++)
		bb_span_end();
	return NULL;
}

Test(span, each_thread_nests_on_its_own)
{
	pthread_t th;
	struct lines l;

	cr_assert_eq(bb_init(0), 0);
	cr_assert_eq(bb_span_begin("main", NULL, 0), 0);
	cr_assert_eq(pthread_create(&th, NULL, nest3, NULL), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(bb_span_end(), 0);
	read_spans(&l, 0);
	/* the thread's outermost span is depth 1, whatever main had open */
	cr_assert(strstr(l.buf, "begin t depth=1\nbegin t depth=2\nbegin t depth=3\n"),
		  "%s", l.buf);
	bb_close();
}

Test(span, spans_deeper_than_the_inline_path_take_the_library_with_the_same_records)
{
	struct lines l;
	char want[4096];
	size_t n = 0;

	cr_assert_eq(bb_init(0), 0);
	for (int i = 1; i <= 30; i++)
		cr_assert_eq(bb_span_begin("d", NULL, 0), 0);
	for (int i = 30; i >= 1; i--)
		cr_assert_eq(bb_span_end(), 0);
	cr_assert_eq(bb_span_end(), -EINVAL);
	for (int i = 1; i <= 30; i++)
		n += (size_t)snprintf(want + n, sizeof(want) - n, "begin d depth=%d\n", i);
	for (int i = 30; i >= 1; i--)
		n += (size_t)snprintf(want + n, sizeof(want) - n, "end depth=%d\n", i);
	read_spans(&l, 0);
	cr_assert_str_eq(l.buf, want);
	bb_close();
}
