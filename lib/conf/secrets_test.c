// SPDX-License-Identifier: MIT
/*
 * The secrets file: strict modes (owner, permission bits, symlinks, file
 * type), the line format, the bounds, and that no message quotes a
 * secret. The tests run as root, so they can chown files to other users.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/conf/conf_testutil.h"
#include "lib/conf/rd_conf.h"

static char dir[64];
static char path[128];
static struct rec rec;

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/secrets_test.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/secrets", dir);
	return 0;
}

static int teardown(void **state)
{
	char p[160];

	unlink(path);
	snprintf(p, sizeof(p), "%s/link", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/fifo", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

static void put(const char *text, size_t len, mode_t mode, uid_t uid)
{
	int fd;

	unlink(path);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	assert_int_equal(chown(path, uid, (gid_t)-1), 0);
}

/* Load path as if the daemon ran as owner; reports go to rec. */
static int load(struct rd_secrets **s, uid_t owner, struct rd_err *err)
{
	struct rd_conf *c;
	int ret;

	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_non_null(c);
	rd_err_clear(err);
	ret = rd_secrets_load(s, path, owner, c, err);
	rd_conf_free(c);
	return ret;
}

static void expect_secret(const struct rd_secrets *s, const char *user, const char *want)
{
	const uint8_t *sec;
	size_t len;

	if (rd_secrets_find(s, user, &sec, &len))
		fail_msg("no secret for %s", user);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(sec, want, len);
}

static void test_good(void **state)
{
	static const char text[] = "# users\n"
				   "\n"
				   "alice:s3cret\n"
				   "  # indented comment\n"
				   "bob:with:colons and spaces \r\n"
				   "carol.x_y-z:c";
	struct rd_secrets *s = NULL;
	struct rd_err err;
	const uint8_t *sec;
	size_t len;

	put(text, sizeof(text) - 1, 0600, 0);
	assert_int_equal(load(&s, 0, &err), 0);
	assert_int_equal(rec.n, 0);
	assert_int_equal(rd_secrets_count(s), 3);
	expect_secret(s, "alice", "s3cret");
	expect_secret(s, "bob", "with:colons and spaces ");
	expect_secret(s, "carol.x_y-z", "c");
	assert_int_equal(rd_secrets_find(s, "dave", &sec, &len), -RD_ENOENT);
	assert_int_equal(rd_secrets_find(s, "Alice", &sec, &len), -RD_ENOENT);
	rd_secrets_free(s);
	rd_secrets_free(NULL);
	assert_int_equal(rd_secrets_count(NULL), 0);

	/* 0400 is stricter than 0600: fine */
	put(text, sizeof(text) - 1, 0400, 0);
	assert_int_equal(load(&s, 0, &err), 0);
	rd_secrets_free(s);

	/* owned by another user, loaded as that user */
	put(text, sizeof(text) - 1, 0600, 65534);
	assert_int_equal(load(&s, 65534, &err), 0);
	rd_secrets_free(s);
}

static void test_modes(void **state)
{
	static const char text[] = "alice:topsecret\n";
	static const mode_t bad[] = {0640, 0604, 0660, 0644, 0700 | 0001, 0610, 0602};
	static char dummy;
	struct rd_secrets *s;
	struct rd_err err;
	char want[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(text, sizeof(text) - 1, bad[i], 0);
		s = (struct rd_secrets *)(void *)&dummy; /* must come back NULL */
		assert_int_equal(load(&s, 0, &err), -RD_EAUTH);
		assert_null(s);
		snprintf(want, sizeof(want),
			 "%s:0: mode %04o lets other users read or change it; make it 0600", path,
			 (unsigned)bad[i]);
		assert_reported(&rec, want);
		/* err has no line number when there is none */
		snprintf(want, sizeof(want),
			 "%s: mode %04o lets other users read or change it; make it 0600", path,
			 (unsigned)bad[i]);
		assert_string_equal(err.msg, want);
	}
}

static void test_owner(void **state)
{
	static const char text[] = "alice:topsecret\n";
	struct rd_secrets *s = NULL;
	struct rd_err err;
	char want[256];

	put(text, sizeof(text) - 1, 0600, 65534);
	assert_int_equal(load(&s, 0, &err), -RD_EAUTH);
	snprintf(want, sizeof(want), "%s:0: owned by uid 65534, not by the daemon's user (uid 0)",
		 path);
	assert_reported(&rec, want);
	snprintf(want, sizeof(want), "%s: owned by uid 65534, not by the daemon's user (uid 0)",
		 path);
	assert_string_equal(err.msg, want);
	assert_int_equal(err.status, RD_EAUTH);

	put(text, sizeof(text) - 1, 0600, 0);
	assert_int_equal(load(&s, 1000, &err), -RD_EAUTH);
	assert_null(s);
}

static void test_file_type(void **state)
{
	struct rd_secrets *s = NULL;
	struct rd_err err;
	char other[160], want[256];

	put("alice:x\n", 8, 0600, 0);
	snprintf(other, sizeof(other), "%s/link", dir);
	assert_int_equal(symlink(path, other), 0);
	memset(&rec, 0, sizeof(rec));
	assert_int_equal(rd_secrets_load(&s, other, 0, NULL, &err), -RD_ESYS);
	snprintf(want, sizeof(want), "%s: is a symbolic link", other);
	assert_string_equal(err.msg, want);

	snprintf(other, sizeof(other), "%s/fifo", dir);
	assert_int_equal(mkfifo(other, 0600), 0);
	rd_err_clear(&err);
	assert_int_equal(rd_secrets_load(&s, other, 0, NULL, &err), -RD_EAUTH);
	snprintf(want, sizeof(want), "%s: not a regular file", other);
	assert_string_equal(err.msg, want);

	rd_err_clear(&err);
	assert_int_equal(rd_secrets_load(&s, dir, 0, NULL, &err), -RD_EAUTH);
	assert_non_null(strstr(err.msg, "not a regular file"));

	rd_err_clear(&err);
	snprintf(other, sizeof(other), "%s/missing", dir);
	assert_int_equal(rd_secrets_load(&s, other, 0, NULL, &err), -RD_ESYS);
	assert_non_null(strstr(err.msg, "No such file or directory"));
	assert_null(s);
}

static void test_format(void **state)
{
	static const struct {
		const char *text;
		unsigned line;
		const char *msg;
	} bad[] = {
	    {"alice:a\nbob-has-no-colon-SECRETWORD\n", 2, "expected 'user:secret'"},
	    {"alice:\n", 1, "empty secret"},
	    {":SECRETWORD\n", 1, "the user name before ':' is not a valid name"},
	    {"al ice:SECRETWORD\n", 1, "the user name before ':' is not a valid name"},
	    {"-alice:SECRETWORD\n", 1, "the user name before ':' is not a valid name"},
	    {"alice:a\nalice:SECRETWORD\n", 2, "user 'alice' has a secret already"},
	    {"# nothing\n\n", 0, "no 'user:secret' line"},
	    {"", 0, "no 'user:secret' line"},
	};
	struct rd_secrets *s = NULL;
	struct rd_err err;
	char want[512];
	size_t i;
	int j;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(bad[i].text, strlen(bad[i].text), 0600, 0);
		assert_int_equal(load(&s, 0, &err), -RD_EAUTH);
		assert_null(s);
		snprintf(want, sizeof(want), "%s:%u: %s", path, bad[i].line, bad[i].msg);
		assert_reported(&rec, want);
		/* never a secret in a message */
		for (j = 0; j < rec.n; j++)
			assert_null(strstr(rec.line[j], "SECRETWORD"));
		assert_null(strstr(err.msg, "SECRETWORD"));
	}

	/* NUL byte */
	put("alice:a\0b\n", 10, 0600, 0);
	assert_int_equal(load(&s, 0, &err), -RD_EAUTH);
	snprintf(want, sizeof(want), "%s:1: NUL byte in the line", path);
	assert_reported(&rec, want);
}

static void test_bounds(void **state)
{
	struct rd_secrets *s = NULL;
	struct rd_err err;
	char want[256], *text, *p;
	int i;

	/* a secret of RD_SECRET_MAX bytes is fine, one more is not */
	text = malloc(RD_SECRETS_FILE_MAX + 2);
	assert_non_null(text);
	p = text + sprintf(text, "a:");
	memset(p, 'k', RD_SECRET_MAX);
	p[RD_SECRET_MAX] = '\n';
	put(text, 2 + RD_SECRET_MAX + 1, 0600, 0);
	assert_int_equal(load(&s, 0, &err), 0);
	rd_secrets_free(s);
	p[RD_SECRET_MAX] = 'k';
	p[RD_SECRET_MAX + 1] = '\n';
	put(text, 2 + RD_SECRET_MAX + 2, 0600, 0);
	assert_int_equal(load(&s, 0, &err), -RD_EAUTH);
	snprintf(want, sizeof(want), "%s:1: secret longer than 256 bytes", path);
	assert_reported(&rec, want);

	/* at most RD_SECRETS_USERS_MAX users */
	for (p = text, i = 0; i < RD_SECRETS_USERS_MAX + 1; i++)
		p += sprintf(p, "u%d:s\n", i);
	put(text, (size_t)(p - text), 0600, 0);
	assert_int_equal(load(&s, 0, &err), -RD_EAUTH);
	snprintf(want, sizeof(want), "%s:1025: more than 1024 users", path);
	assert_reported(&rec, want);

	/* at most RD_SECRETS_FILE_MAX bytes */
	memset(text, '#', RD_SECRETS_FILE_MAX + 1);
	put(text, RD_SECRETS_FILE_MAX + 1, 0600, 0);
	assert_int_equal(load(&s, 0, &err), -RD_EAUTH);
	snprintf(want, sizeof(want), "%s:0: larger than 65536 bytes", path);
	assert_reported(&rec, want);
	free(text);
}

/* rd_conf_check with RD_CONF_CHECK_SYSTEM loads the secrets file the same way. */
static void test_from_config(void **state)
{
	struct rd_conf *c;
	char text[256], want[256];

	put("alice:x\n", 8, 0644, 0);
	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	snprintf(text, sizeof(text), "secrets file = %s\n", path);
	assert_int_equal(rd_conf_parse(c, "t.conf", text, strlen(text)), 0);
	assert_int_equal(rd_conf_check(c, RD_CONF_CHECK_SYSTEM), -RD_EUSAGE);
	snprintf(want, sizeof(want),
		 "%s:0: mode 0644 lets other users read or change it; make it 0600", path);
	assert_reported(&rec, want);
	rd_conf_free(c);

	assert_int_equal(chmod(path, 0600), 0);
	memset(&rec, 0, sizeof(rec));
	c = rd_conf_new(rec_fn, &rec);
	assert_int_equal(rd_conf_parse(c, "t.conf", text, strlen(text)), 0);
	assert_int_equal(rd_conf_check(c, RD_CONF_CHECK_SYSTEM), 0);
	rd_conf_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_good, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_type, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_format, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_from_config, setup, teardown),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "secrets_test: needs root (chown to other users)\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
