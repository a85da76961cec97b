// SPDX-License-Identifier: MIT
/*
 * The endpoint over real sockets on 127.0.0.1: the page, 404 and 405, the
 * allow list, the text format's escaping, and scrapers that never read:
 * they hold connections (at most max_clients, for timeout_s), never the
 * endpoint's thread or its owner.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/metrics/rd_metrics.h"

struct ctx {
	int allow;
	volatile int renders;
	size_t big; /* render this many bytes of comment lines as well */
};

static int allow(void *c, const struct sockaddr *peer, socklen_t len)
{
	struct ctx *x = c;

	assert_int_equal(peer->sa_family, AF_INET);
	(void)len;
	return x->allow;
}

static int render(void *c, FILE *out)
{
	struct ctx *x = c;
	size_t i;

	__atomic_add_fetch(&x->renders, 1, __ATOMIC_SEQ_CST);
	rd_prom_head(out, "t_total", "counter", "a test counter");
	rd_prom_sample(out, "t_total", "module", "a\"b\\c\nd", 42);
	rd_prom_sample(out, "t_plain", NULL, NULL, 7);
	for (i = 0; i < x->big / 64; i++)
		fprintf(out, "# %061zu\n", i);
	return 0;
}

static struct rd_metrics_srv *start(struct ctx *x, unsigned clients, unsigned timeout_s)
{
	struct sockaddr_in a;
	struct rd_metrics_cfg cfg;
	struct rd_metrics_srv *s = NULL;
	struct rd_err err;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(&cfg, 0, sizeof(cfg));
	cfg.addr = (struct sockaddr *)&a;
	cfg.addrlen = sizeof(a);
	cfg.allow = allow;
	cfg.render = render;
	cfg.ctx = x;
	cfg.max_clients = clients;
	cfg.timeout_s = timeout_s;
	if (rd_metrics_start(&s, &cfg, &err))
		fail_msg("%s", err.msg);
	assert_true(rd_metrics_port(s) > 0);
	return s;
}

static int dial(unsigned port, int rcvbuf)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Send req, read the whole answer (until close) into buf within ms; its length, -1 on timeout. */
static ssize_t ask(unsigned port, const char *req, char *buf, size_t cap, int ms)
{
	int fd = dial(port, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t n = 0;
	ssize_t r;

	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	for (;;) {
		if (poll(&p, 1, ms) <= 0) {
			close(fd);
			return -1;
		}
		r = recv(fd, buf + n, cap - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n + 1 >= cap)
			break;
	}
	buf[n] = '\0';
	close(fd);
	return (ssize_t)n;
}

static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

static void test_page(void **state)
{
	struct ctx x = {.allow = 1};
	struct rd_metrics_srv *s = start(&x, 0, 0);
	static char buf[1 << 16];

	assert_true(ask(rd_metrics_port(s), get, buf, sizeof(buf), 5000) > 0);
	assert_non_null(strstr(buf, "HTTP/1.1 200"));
	assert_non_null(strstr(buf, "text/plain; version=0.0.4; charset=utf-8"));
	assert_non_null(strstr(buf, "# HELP t_total a test counter\n# TYPE t_total counter\n"));
	assert_non_null(strstr(buf, "t_total{module=\"a\\\"b\\\\c\\nd\"} 42\n"));
	assert_non_null(strstr(buf, "\nt_plain 7\n"));

	assert_true(ask(rd_metrics_port(s),
			"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf, sizeof(buf),
			5000) > 0);
	assert_non_null(strstr(buf, "HTTP/1.1 404"));
	assert_true(ask(rd_metrics_port(s),
			"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
			"Connection: close\r\n\r\nabc",
			buf, sizeof(buf), 5000) > 0);
	assert_non_null(strstr(buf, "HTTP/1.1 405"));
	rd_metrics_stop(s);
	rd_metrics_stop(NULL);
}

/* A peer the allow list refuses is closed unanswered; render never runs. */
static void test_refused(void **state)
{
	struct ctx x = {.allow = 0};
	struct rd_metrics_srv *s = start(&x, 0, 0);
	char buf[4096];

	assert_int_equal(ask(rd_metrics_port(s), get, buf, sizeof(buf), 5000), 0);
	assert_int_equal(x.renders, 0);
	rd_metrics_stop(s);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * Scrapers that ask for a 4 MiB page and never read: the pages are
 * rendered at once (the owner is never waited for), another scraper is
 * answered in full while they hang, and after timeout_s they are gone,
 * so they cannot keep their connections for ever.
 */
static void test_slow_scrapers(void **state)
{
	struct ctx x = {.allow = 1, .big = 4u << 20};
	struct rd_metrics_srv *s = start(&x, 4, 1);
	static char buf[6u << 20];
	int stuck[3], i;
	double t0;
	ssize_t n;

	for (i = 0; i < 3; i++) {
		stuck[i] = dial(rd_metrics_port(s), 4096);
		assert_int_equal(send(stuck[i], get, strlen(get), MSG_NOSIGNAL),
				 (ssize_t)strlen(get));
	}
	t0 = now_s();
	while (__atomic_load_n(&x.renders, __ATOMIC_SEQ_CST) < 3 && now_s() - t0 < 5)
		usleep(10000);
	assert_int_equal(x.renders, 3);
	t0 = now_s();
	n = ask(rd_metrics_port(s), get, buf, sizeof(buf), 5000);
	assert_true(n > (ssize_t)(4u << 20));
	assert_true(now_s() - t0 < 3);
	/* after the timeout the stuck ones are dropped: 4 new scrapers fit */
	sleep(3);
	for (i = 0; i < 4; i++) {
		n = ask(rd_metrics_port(s), get, buf, sizeof(buf), 5000);
		assert_true(n > (ssize_t)(4u << 20));
	}
	for (i = 0; i < 3; i++)
		close(stuck[i]);
	rd_metrics_stop(s);
}

static void test_bind_error(void **state)
{
	struct ctx x = {.allow = 1};
	struct rd_metrics_srv *s = start(&x, 0, 0), *s2 = NULL;
	struct sockaddr_in a;
	struct rd_metrics_cfg cfg;
	struct rd_err err;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)rd_metrics_port(s));
	memset(&cfg, 0, sizeof(cfg));
	cfg.addr = (struct sockaddr *)&a;
	cfg.addrlen = sizeof(a);
	cfg.render = render;
	cfg.ctx = &x;
	rd_err_clear(&err);
	assert_int_equal(rd_metrics_start(&s2, &cfg, &err), -RD_ESYS);
	assert_null(s2);
	assert_non_null(strstr(err.msg, "metrics listen 127.0.0.1:"));
	assert_non_null(strstr(err.msg, "Address already in use"));
	rd_metrics_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_page),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_slow_scrapers),
	    cmocka_unit_test(test_bind_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
