// SPDX-License-Identifier: MIT
/* The lanes' message order (rd_xport_reseq.c): in order, overtaken, hostile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib/xport/rdma/rd_xport_reseq.h"

static void test_in_order(void **state)
{
	struct rd_reseq q;
	unsigned idx;
	uint32_t len;

	(void)state;
	assert_int_equal(rd_reseq_init(&q, 4), 0);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 0);
	assert_int_equal(rd_reseq_push(&q, 0, 7, 100), 0);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 1);
	assert_int_equal(idx, 7);
	assert_int_equal(len, 100);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 0);
	rd_reseq_fini(&q);
}

/* 2 and 1 overtake 0 (faster lanes): nothing comes up before 0 does. */
static void test_overtaken(void **state)
{
	struct rd_reseq q;
	unsigned idx;
	uint32_t len;

	(void)state;
	assert_int_equal(rd_reseq_init(&q, 3), 0);
	assert_int_equal(rd_reseq_push(&q, 2, 12, 2), 0);
	assert_int_equal(rd_reseq_push(&q, 1, 11, 1), 0);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 0);
	assert_int_equal(rd_reseq_push(&q, 0, 10, 0), 0);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 1);
	assert_int_equal(idx, 10);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 1);
	assert_int_equal(idx, 11);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 1);
	assert_int_equal(idx, 12);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 0);
	rd_reseq_fini(&q);
}

/* A peer that repeats a number or sends an old one (a copy after a
 * failover: dropped), or runs cap ahead (refused). */
static void test_hostile(void **state)
{
	struct rd_reseq q;
	unsigned idx;
	uint32_t len;

	(void)state;
	assert_int_equal(rd_reseq_init(&q, 4), 0);
	assert_int_equal(rd_reseq_push(&q, 1, 1, 1), 0);
	assert_int_equal(rd_reseq_push(&q, 1, 2, 1), 1); /* twice: a copy */
	assert_int_equal(rd_reseq_push(&q, 4, 3, 1), -1); /* beyond the credits */
	assert_int_equal(rd_reseq_push(&q, 0, 0, 1), 0);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 1);
	assert_int_equal(rd_reseq_pop(&q, &idx, &len), 1);
	assert_int_equal(idx, 1); /* the first copy of 1 stayed */
	assert_int_equal(rd_reseq_push(&q, 0, 0, 1), 1); /* already handed up: a copy */
	assert_int_equal(rd_reseq_push(&q, 6, 0, 1), -1); /* still beyond the credits */
	assert_int_equal(rd_reseq_push(&q, 0x80000002u, 0, 1), -1); /* far off either way */
	assert_int_equal(rd_reseq_push(&q, 5, 0, 1), 0);  /* 2..5 is the window now */
	rd_reseq_fini(&q);
}

/* The numbers wrap at 2^32 and the ring (of any size) follows. */
static void test_wrap(void **state)
{
	struct rd_reseq q;
	unsigned idx, i;
	uint32_t len, seq;

	(void)state;
	assert_int_equal(rd_reseq_init(&q, 5), 0);
	q.next = 0xfffffffdu;
	for (i = 0; i < 12; i += 2) {
		seq = 0xfffffffdu + i;
		assert_int_equal(rd_reseq_push(&q, seq + 1, i + 1, seq + 1), 0);
		assert_int_equal(rd_reseq_pop(&q, &idx, &len), 0);
		assert_int_equal(rd_reseq_push(&q, seq, i, seq), 0);
		assert_int_equal(rd_reseq_pop(&q, &idx, &len), 1);
		assert_int_equal(idx, i);
		assert_int_equal(len, seq);
		assert_int_equal(rd_reseq_pop(&q, &idx, &len), 1);
		assert_int_equal(idx, i + 1);
		assert_int_equal(len, (uint32_t)(seq + 1));
	}
	assert_int_equal(q.held, 0);
	rd_reseq_fini(&q);
}

/* The write history behind a failover's care for slots written again. */
static void test_whist(void **state)
{
	static struct rd_whist h;
	uint32_t i;

	(void)state;
	rd_whist_add(&h, 0x1000, 10);
	rd_whist_add(&h, 0x2000, 11);
	rd_whist_add(&h, 0x1000, 13); /* slot 0x1000 asked again, written again */
	assert_int_equal(rd_whist_since(&h, 0x1000, 10), 1);
	assert_int_equal(rd_whist_since(&h, 0x2000, 11), 0);
	assert_int_equal(rd_whist_since(&h, 0x1000, 13), 0);
	/* numbers wrap at 2^32 */
	rd_whist_add(&h, 0x3000, 0xffffffffu);
	rd_whist_add(&h, 0x3000, 2);
	assert_int_equal(rd_whist_since(&h, 0x3000, 0xffffffffu), 1);
	/* more than RD_WHIST writes since: cannot tell */
	for (i = 0; i < RD_WHIST; i++)
		rd_whist_add(&h, 0x9000, 100 + i);
	assert_int_equal(rd_whist_since(&h, 0x3000, 2), -1);
	assert_int_equal(rd_whist_since(&h, 0x9000, 100 + RD_WHIST - 2), 1);
	assert_int_equal(rd_whist_since(&h, 0x4000, 100 + RD_WHIST - 2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_in_order),
	    cmocka_unit_test(test_overtaken),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_whist),
	    cmocka_unit_test(test_wrap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
