// SPDX-License-Identifier: MIT
#include "lib/base/rd_path.h"

#include <string.h>

int rd_path_names_contents(const char *path)
{
	size_t n = strlen(path);
	const char *b;

	if (!n || path[n - 1] == '/')
		return 1;
	b = memrchr(path, '/', n);
	b = b ? b + 1 : path;
	return !strcmp(b, ".") || !strcmp(b, "..");
}
