// SPDX-License-Identifier: MIT
/* rd_sd_notify against a real AF_UNIX datagram socket, path and abstract. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/sdnotify/rd_sd_notify.h"

/* Bind a datagram socket to NAME ("/path" or "@abstract"); returns the fd. */
static int listen_at(const char *name)
{
	struct sockaddr_un sa;
	socklen_t len;
	size_t n = strlen(name);
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, name, n);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	if (name[0] == '@') {
		sa.sun_path[0] = '\0';
		len--;
	}
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

static void expect_msg(int fd, const char *want)
{
	char buf[256];
	ssize_t n;

	n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_unset_is_a_no_op(void **state)
{
	struct rd_err e;

	rd_err_clear(&e);
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(rd_sd_notify("READY=1", &e), 1);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(rd_sd_notify("READY=1", &e), 1);
	assert_int_equal(e.status, 0);
}

static void test_path_socket(void **state)
{
	char dir[] = "/tmp/sdnotify_test.XXXXXX", path[128];
	struct rd_err e;
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	fd = listen_at(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(rd_sd_notify("READY=1\nSTATUS=listening on port 1", &e), 0);
	expect_msg(fd, "READY=1\nSTATUS=listening on port 1");
	assert_int_equal(rd_sd_notify("STOPPING=1", &e), 0);
	expect_msg(fd, "STOPPING=1");
	close(fd);
	unlink(path);
	rmdir(dir);
}

static void test_abstract_socket(void **state)
{
	char name[64];
	struct rd_err e;
	int fd;

	snprintf(name, sizeof(name), "@rdcp-sdnotify-test-%d", (int)getpid());
	fd = listen_at(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(rd_sd_notify("READY=1", &e), 0);
	expect_msg(fd, "READY=1");
	close(fd);
}

static void test_errors_name_the_socket(void **state)
{
	struct rd_err e;

	rd_err_clear(&e);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_int_equal(rd_sd_notify("READY=1", &e), -RD_EUSAGE);
	assert_non_null(strstr(e.msg, "relative/path"));
	rd_err_clear(&e);
	setenv("NOTIFY_SOCKET", "/nonexistent/rdcp-notify", 1);
	assert_int_equal(rd_sd_notify("READY=1", &e), -RD_ESYS);
	assert_non_null(strstr(e.msg, "/nonexistent/rdcp-notify"));
	assert_int_equal(e.sys_errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unset_is_a_no_op),
	    cmocka_unit_test(test_path_socket),
	    cmocka_unit_test(test_abstract_socket),
	    cmocka_unit_test(test_errors_name_the_socket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
