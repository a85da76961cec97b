// SPDX-License-Identifier: MIT
/*
 * Fuzz everything lib/proto decodes off the wire: control messages, CM
 * private data and wire paths. Properties (abort() on violation, so both
 * libFuzzer and the corpus driver report it):
 *  - decoders never crash or read outside the input (ASan),
 *  - a refusal always comes with a reason,
 *  - an accepted message re-encodes to exactly the input bytes (the
 *    encoding is canonical) and decodes again to an equal message,
 *  - rd_path_check agrees with a naive reference implementation.
 */
#include "tests/fuzz/fuzz_proto.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"
#include "lib/proto/rd_proto_testutil.h"

#define CHECK(cond)              \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)

static uint8_t enc[RD_CTRL_MAX];
static uint8_t fixed[RD_CTRL_MAX];

static void fuzz_msg(const uint8_t *data, size_t size)
{
	struct rd_msg m, m2;
	const char *why = NULL;
	int n;

	if (rd_msg_decode(data, size, &m, &why)) {
		CHECK(why != NULL);
		return;
	}
	CHECK(why == NULL);
	CHECK(strcmp(rd_msg_type_name(m.hdr.type), "unknown") != 0);
	CHECK(m.hdr.length == size - RD_HDR_LEN);
	n = rd_msg_encode(enc, sizeof(enc), &m);
	CHECK(n >= RD_HDR_LEN);
	CHECK((size_t)n == size);
	CHECK(memcmp(enc, data, size) == 0);
	why = "unset";
	CHECK(rd_msg_decode(enc, (size_t)n, &m2, &why) == 0);
	CHECK(why == NULL);
	CHECK(rd_msg_equal(&m, &m2));
	/* One byte less room must be refused, not overflow. */
	CHECK(rd_msg_encode(enc, (size_t)n - 1, &m) == -RD_EUSAGE);
}

static void fuzz_cm(const uint8_t *data, size_t size)
{
	struct rd_cm_req req, req2;
	struct rd_cm_rep rep, rep2;
	struct rd_cm_rej rej, rej2;
	uint8_t buf[RD_CM_JOIN_RAIL_LEN];
	size_t n;

	if (rd_cm_req_decode(data, size, &req) == 0) {
		CHECK(size >= RD_CM_REQ_LEN);
		n = rd_cm_req_encode(buf, &req);
		CHECK(n == (!(req.flags & RD_CMF_JOIN)	  ? RD_CM_REQ_LEN
			    : (req.flags & RD_CMF_RAILS) ? RD_CM_JOIN_RAIL_LEN
							 : RD_CM_JOIN_LEN));
		/* a RAILS JOIN cut short of its rail byte reads rail 0 */
		CHECK(size >= n || (n == RD_CM_JOIN_RAIL_LEN && req.rail == 0));
		CHECK(memcmp(buf, data, size < n ? size : n) == 0);
		CHECK(rd_cm_req_decode(buf, n, &req2) == 0);
		CHECK(req.ver_min == req2.ver_min && req.ver_max == req2.ver_max &&
		      req.flags == req2.flags && req.ctrl_depth == req2.ctrl_depth &&
		      req.lanes == req2.lanes && req.sid == req2.sid && req.rail == req2.rail &&
		      !memcmp(req.proof, req2.proof, RD_LANE_PROOF_LEN));
	} else {
		CHECK(size < RD_CM_REQ_LEN || memcmp(data, "RDCP", 4) != 0 ||
		      (data[11] & RD_CMF_JOIN));
	}
	if (rd_cm_rep_decode(data, size, &rep) == 0) {
		CHECK(rep.lanes >= 1 && rep.lanes <= RD_LANES_MAX);
		n = rd_cm_rep_encode(buf, &rep);
		/* The first 12 bytes always round-trip; the lanes part when used. */
		CHECK(memcmp(buf, data, RD_CM_REP_LEN) == 0);
		CHECK(rd_cm_rep_decode(buf, n, &rep2) == 0);
		CHECK(rep.version == rep2.version && rep.ctrl_depth == rep2.ctrl_depth &&
		      rep.flags == rep2.flags && rep.lanes == rep2.lanes && rep.sid == rep2.sid &&
		      rep.rail == rep2.rail);
	}
	if (rd_cm_rej_decode(data, size, &rej) == 0) {
		rd_cm_rej_encode(buf, &rej);
		CHECK(memcmp(buf, data, RD_CM_REJ_LEN) == 0);
		CHECK(rd_cm_rej_decode(buf, RD_CM_REJ_LEN, &rej2) == 0);
		CHECK(rej.reason == rej2.reason && rej.ver_min == rej2.ver_min &&
		      rej.ver_max == rej2.ver_max);
		CHECK(rd_rej_reason_str(rej.reason) != NULL);
	}
}

/* The path rules, written the naive way: split on '/' and look. */
static bool ref_path_ok(const uint8_t *p, size_t len)
{
	size_t start = 0, i, n;

	if (len == 0 || len > RD_PATH_MAX)
		return false;
	for (i = 0; i <= len; i++) {
		if (i < len && p[i] == '\0')
			return false;
		if (i < len && p[i] != '/')
			continue;
		n = i - start;
		if (n == 0 || (n == 1 && p[start] == '.') ||
		    (n == 2 && p[start] == '.' && p[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

static void fuzz_path(const uint8_t *data, size_t size)
{
	const char *why = "unset";
	int ret;

	ret = rd_path_check((const char *)data, size, &why);
	CHECK(ret == 0 || ret == -RD_EPROTO);
	CHECK((ret == 0) == ref_path_ok(data, size));
	CHECK((ret == 0) == (why == NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t plen;

	fuzz_msg(data, size);
	fuzz_cm(data, size);
	fuzz_path(data, size);
	/*
	 * Again with a consistent header (reserved 0, length = size - 8), so
	 * mutations reach the payload decoders instead of dying at the
	 * length check.
	 */
	if (size >= RD_HDR_LEN && size <= RD_CTRL_MAX) {
		memcpy(fixed, data, size);
		plen = size - RD_HDR_LEN;
		fixed[1] = 0;
		fixed[4] = (uint8_t)(plen >> 24);
		fixed[5] = (uint8_t)(plen >> 16);
		fixed[6] = (uint8_t)(plen >> 8);
		fixed[7] = (uint8_t)plen;
		fuzz_msg(fixed, size);
	}
	return 0;
}
