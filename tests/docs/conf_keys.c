// SPDX-License-Identifier: MIT
/* Print lib/conf's key table, one "global|module<TAB>key" line per key. */
#include <stdio.h>

#include "lib/conf/rd_conf.h"

int main(void)
{
	int k;

	for (k = 0; k < RD_CK_COUNT; k++)
		printf("%s\t%s\n", rd_conf_key_section(k) == RD_CONF_GLOBAL ? "global" : "module",
		       rd_conf_key_name(k));
	return 0;
}
