// SPDX-License-Identifier: MIT
/*
 * Fuzz the client's report path (issue 7 item 8): what rdcp does with a
 * NOTE or a skip, i.e. path bytes from the wire and a message, through
 * rd_report_line, rd_report_error, rd_report_note and rd_report_json.
 *
 * Input: u16 big-endian path length, the path bytes, then the message
 * bytes (the harness NUL-terminates a heap copy of exactly that size, so
 * ASan sees any read past either), then a status byte if any is left.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/report/rd_report.h"
#include "tests/fuzz/fuzz_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char line[RD_REPORT_PATH_MAX * 4 + RD_REPORT_MSG_MAX * 4 + 8];
	char small[16];
	struct rd_report rep;
	size_t plen, mlen;
	char *path, *msg;
	int status = -RD_ESYS;
	FILE *null;

	if (size < 2)
		return 0;
	plen = (size_t)data[0] << 8 | data[1];
	data += 2;
	size -= 2;
	if (plen > size)
		plen = size;
	mlen = size - plen;
	if (mlen && data[size - 1] < RD_STATUS_MAX) {
		status = -(int)data[size - 1];
		mlen--;
	}
	path = malloc(plen ? plen : 1);
	msg = malloc(mlen + 1);
	if (!path || !msg)
		abort();
	memcpy(path, data, plen);
	memcpy(msg, data + plen, mlen);
	msg[mlen] = '\0';

	if (rd_report_line(line, sizeof(line), path, plen, status, msg) >= sizeof(line))
		abort();
	if (strlen(line) >= sizeof(line) || strchr(line, '\n') || strchr(line, '\033'))
		abort(); /* a peer must not break or color our lines */
	rd_report_line(small, sizeof(small), path, plen, status, msg);
	if (strlen(small) >= sizeof(small))
		abort();
	rd_report_line(line, sizeof(line), path, plen, status, NULL);
	if (rd_report_strip_path(msg, path, plen) > msg + mlen)
		abort();

	rd_report_init(&rep, 4);
	rd_report_error(&rep, path, plen, status, msg);
	rd_report_error(&rep, NULL, 0, status, msg);
	rd_report_note(&rep, path, plen, msg);
	null = fopen("/dev/null", "w");
	if (null) {
		rd_report_json(null, &rep, NULL, 1.0, "sha256", 23);
		fclose(null);
	}
	rd_report_free(&rep);
	free(path);
	free(msg);
	return 0;
}
