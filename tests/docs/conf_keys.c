// SPDX-License-Identifier: MIT
/*
 * conf_keys            print lib/conf's key table, one "global|module<TAB>key"
 *                      line per key
 * conf_keys --parse F  parse F as rdcpd.conf (syntax and values only: no
 *                      paths, users or files are looked at); problems on
 *                      stderr, exit 1 if any
 */
#include <stdio.h>
#include <string.h>

#include "lib/conf/rd_conf.h"

static void on_problem(void *ctx, const char *file, unsigned line, int sev, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s:%u: %s%s\n", file ? file : "-", line,
		sev == RD_CONF_WARNING ? "warning: " : "", msg);
}

int main(int argc, char **argv)
{
	struct rd_conf *c;
	int k, ret;

	if (argc == 3 && !strcmp(argv[1], "--parse")) {
		c = rd_conf_new(on_problem, NULL);
		if (!c)
			return 2;
		ret = rd_conf_load(c, argv[2]) || c->nerrors ? 1 : 0;
		rd_conf_free(c);
		return ret;
	}
	for (k = 0; k < RD_CK_COUNT; k++)
		printf("%s\t%s\n", rd_conf_key_section(k) == RD_CONF_GLOBAL ? "global" : "module",
		       rd_conf_key_name(k));
	return 0;
}
