// SPDX-License-Identifier: MIT
/*
 * rdcpd --status: read the same configuration the daemon reads (for its
 * status socket), ask the daemon there (lib/daemon/rd_status.h) and print
 * its answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/rdcpd/rdcpd.h"
#include "lib/base/rd_escape.h"
#include "lib/daemon/rd_status.h"

static void problem(void *ctx, const char *file, unsigned line, int sev, const char *msg)
{
	char text[PATH_MAX + 2 * RD_CONF_MSG_MAX], esc[4 * sizeof(text)];

	(void)ctx;
	if (sev == RD_CONF_WARNING)
		return;
	if (file && line)
		snprintf(text, sizeof(text), "%s:%u: %s", file, line, msg);
	else
		snprintf(text, sizeof(text), "%s: %s", file ? file : "rdcpd", msg);
	rd_escape(esc, sizeof(esc), text, strlen(text));
	fprintf(stderr, "rdcpd: %s\n", esc);
}

int rdcpd_status(const char *config, int json)
{
	struct rd_conf *c = rd_conf_new(problem, NULL);
	const char *path = config;
	char esc[4 * RD_ERR_MSG_MAX], *doc = NULL;
	struct rd_err err;
	size_t len;
	int code = 1;

	if (!c) {
		fprintf(stderr, "rdcpd: out of memory\n");
		return 1;
	}
	if (!path && !access(RD_CONF_DEFAULT_PATH, F_OK))
		path = RD_CONF_DEFAULT_PATH;
	if (path && rd_conf_load(c, path))
		goto out;
	if (!c->status_socket[0]) {
		fprintf(stderr,
			"rdcpd: --status: %s sets no status socket ('status socket' is empty)\n",
			path);
		goto out;
	}
	rd_err_clear(&err);
	if (rd_status_query(c->status_socket, json, &doc, &len, &err)) {
		rd_escape(esc, sizeof(esc), err.msg, strlen(err.msg));
		fprintf(stderr, "rdcpd: --status: %s\n", esc);
		goto out;
	}
	if (fwrite(doc, 1, len, stdout) != len || fflush(stdout))
		goto out;
	code = 0;
out:
	free(doc);
	rd_conf_free(c);
	return code;
}
