// SPDX-License-Identifier: MIT
/*
 * Connection private data (section 1 of rd_proto.h), wire path checks and
 * the name tables.
 */
#include "lib/proto/rd_proto.h"

#include <string.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto_buf.h"

size_t rd_cm_req_encode(uint8_t *buf, const struct rd_cm_req *r)
{
	int join = !!(r->flags & RD_CMF_JOIN), rail = join && (r->flags & RD_CMF_RAILS);
	struct rd_wcur w;

	rd_wcur_init(&w, buf, rail ? RD_CM_JOIN_RAIL_LEN : join ? RD_CM_JOIN_LEN : RD_CM_REQ_LEN);
	rd_put_u32(&w, RD_MAGIC);
	rd_put_u16(&w, r->ver_min);
	rd_put_u16(&w, r->ver_max);
	rd_put_u32(&w, r->flags);
	rd_put_u16(&w, r->ctrl_depth);
	rd_put_u16(&w, r->lanes);
	if (!join)
		return RD_CM_REQ_LEN;
	rd_put_u64(&w, r->sid);
	rd_put_bytes(&w, r->proof, RD_LANE_PROOF_LEN);
	if (!rail)
		return RD_CM_JOIN_LEN;
	rd_put_u8(&w, r->rail);
	return RD_CM_JOIN_RAIL_LEN;
}

int rd_cm_req_decode(const uint8_t *buf, size_t len, struct rd_cm_req *r)
{
	struct rd_rcur c;

	memset(r, 0, sizeof(*r));
	if (!buf || len < RD_CM_REQ_LEN)
		return -RD_EPROTO;
	rd_rcur_init(&c, buf, len < RD_CM_JOIN_RAIL_LEN ? len : RD_CM_JOIN_RAIL_LEN);
	if (rd_get_u32(&c) != RD_MAGIC)
		return -RD_EPROTO;
	r->ver_min = rd_get_u16(&c);
	r->ver_max = rd_get_u16(&c);
	r->flags = rd_get_u32(&c);
	r->ctrl_depth = rd_get_u16(&c);
	r->lanes = rd_get_u16(&c);
	if (!(r->flags & RD_CMF_JOIN))
		return 0;
	/* A JOIN without its sid and proof, or naming lane 0, is malformed. */
	if (len < RD_CM_JOIN_LEN || !r->lanes || r->lanes >= RD_LANES_MAX)
		return -RD_EPROTO;
	r->sid = rd_get_u64(&c);
	memcpy(r->proof, rd_rcur_take(&c, RD_LANE_PROOF_LEN), RD_LANE_PROOF_LEN);
	if ((r->flags & RD_CMF_RAILS) && len >= RD_CM_JOIN_RAIL_LEN)
		r->rail = rd_get_u8(&c);
	return r->rail < RD_RAILS_MAX ? 0 : -RD_EPROTO;
}

size_t rd_cm_rep_encode(uint8_t *buf, const struct rd_cm_rep *r)
{
	int lanes = r->lanes > 1;
	struct rd_wcur w;

	rd_wcur_init(&w, buf, lanes ? RD_CM_REP_LANES_LEN : RD_CM_REP_LEN);
	rd_put_u32(&w, RD_MAGIC);
	rd_put_u16(&w, r->version);
	rd_put_u16(&w, r->ctrl_depth);
	rd_put_u32(&w, r->flags);
	if (!lanes)
		return RD_CM_REP_LEN;
	rd_put_u16(&w, r->lanes);
	rd_put_u16(&w, r->rail);
	rd_put_u64(&w, r->sid);
	return RD_CM_REP_LANES_LEN;
}

int rd_cm_rep_decode(const uint8_t *buf, size_t len, struct rd_cm_rep *r)
{
	struct rd_rcur c;

	memset(r, 0, sizeof(*r));
	if (!buf || len < RD_CM_REP_LEN)
		return -RD_EPROTO;
	rd_rcur_init(&c, buf, len < RD_CM_REP_LANES_LEN ? RD_CM_REP_LEN : RD_CM_REP_LANES_LEN);
	if (rd_get_u32(&c) != RD_MAGIC)
		return -RD_EPROTO;
	r->version = rd_get_u16(&c);
	r->ctrl_depth = rd_get_u16(&c);
	r->flags = rd_get_u32(&c);
	r->lanes = 1;
	if (len < RD_CM_REP_LANES_LEN)
		return 0;
	/*
	 * Longer data: the lanes fields. IB CM pads a 12-byte accept to 196
	 * bytes of zeros, so 0 lanes is one lane; more than RD_LANES_MAX is
	 * malformed.
	 */
	r->lanes = rd_get_u16(&c);
	r->rail = rd_get_u16(&c);
	r->sid = rd_get_u64(&c);
	if (r->lanes > RD_LANES_MAX || r->rail >= RD_RAILS_MAX)
		return -RD_EPROTO;
	if (r->lanes <= 1) {
		r->lanes = 1;
		r->sid = 0;
	}
	return 0;
}

unsigned rd_lanes_grant(unsigned wanted, unsigned cap)
{
	unsigned n = wanted ? wanted : 1;

	if (!cap)
		cap = 1;
	if (n > cap)
		n = cap;
	return n > RD_LANES_MAX ? RD_LANES_MAX : n;
}

void rd_lane_proof_ctx(uint8_t *ctx, const uint8_t *nonce, uint64_t sid, unsigned lane,
		       unsigned rail)
{
	struct rd_wcur w;

	rd_wcur_init(&w, ctx, RD_LANE_PROOF_CTX_LEN);
	rd_put_bytes(&w, nonce, RD_LANE_NONCE_LEN);
	rd_put_u64(&w, sid);
	rd_put_u16(&w, (uint16_t)lane);
	rd_put_u8(&w, (uint8_t)rail);
}

void rd_cm_rej_encode(uint8_t *buf, const struct rd_cm_rej *r)
{
	struct rd_wcur w;

	rd_wcur_init(&w, buf, RD_CM_REJ_LEN);
	rd_put_u32(&w, RD_MAGIC);
	rd_put_u16(&w, r->reason);
	rd_put_u16(&w, r->ver_min);
	rd_put_u16(&w, r->ver_max);
}

int rd_cm_rej_decode(const uint8_t *buf, size_t len, struct rd_cm_rej *r)
{
	struct rd_rcur c;

	memset(r, 0, sizeof(*r));
	if (!buf || len < RD_CM_REJ_LEN)
		return -RD_EPROTO;
	rd_rcur_init(&c, buf, RD_CM_REJ_LEN);
	if (rd_get_u32(&c) != RD_MAGIC)
		return -RD_EPROTO;
	r->reason = rd_get_u16(&c);
	r->ver_min = rd_get_u16(&c);
	r->ver_max = rd_get_u16(&c);
	return 0;
}

const char *rd_rej_reason_str(uint16_t reason)
{
	switch (reason) {
	case RD_REJ_VERSION:
		return "no common protocol version";
	case RD_REJ_BUSY:
		return "server busy";
	case RD_REJ_AUTH:
		return "this address is not allowed (hosts allow/deny)";
	case RD_REJ_BADREQ:
		return "malformed connection request";
	case RD_REJ_SHUTDOWN:
		return "server shutting down";
	case RD_REJ_HOST_BUSY:
		return "too many connections from this address (the server's max connections "
		       "per host); try again later";
	case RD_REJ_LANE:
		return "extra lane refused: no session of this server waits for it with that "
		       "proof";
	default:
		return "unknown";
	}
}

int rd_rej_status(uint16_t reason)
{
	switch (reason) {
	case RD_REJ_VERSION:
		return RD_EVERSION;
	case RD_REJ_BUSY:
	case RD_REJ_HOST_BUSY:
		return RD_EBUSY;
	case RD_REJ_AUTH:
	case RD_REJ_LANE:
		return RD_EAUTH;
	case RD_REJ_SHUTDOWN:
		return RD_EREMOTE;
	default:
		return RD_ECONN;
	}
}

static const char *const msg_type_names[RD_MSG_TYPE_MAX] = {
    [RD_MSG_CREDIT] = "CREDIT", [RD_MSG_OPEN] = "OPEN",	      [RD_MSG_OPEN_OK] = "OPEN_OK",
    [RD_MSG_ERROR] = "ERROR",	[RD_MSG_FILE] = "FILE",	      [RD_MSG_END] = "END",
    [RD_MSG_GET] = "GET",	[RD_MSG_DATA] = "DATA",	      [RD_MSG_CHUNK_ERR] = "CHUNK_ERR",
    [RD_MSG_DONE] = "DONE",	[RD_MSG_NOTE] = "NOTE",	      [RD_MSG_FIN] = "FIN",
    [RD_MSG_TLS] = "TLS",	[RD_MSG_META] = "META",	      [RD_MSG_FILES] = "FILES",
    [RD_MSG_DONES] = "DONES",	[RD_MSG_RAILS] = "RAILS",     [RD_MSG_LANES] = "LANES",
    [RD_MSG_RULES] = "RULES",
    [RD_MSG_LIST] = "LIST",	[RD_MSG_MODULES] = "MODULES", [RD_MSG_DELETED] = "DELETED", [RD_MSG_FILEZ] = "FILEZ",
};

const char *rd_msg_type_name(uint8_t type)
{
	if (type == RD_MSG_WANT)
		return "WANT";
	if (type >= RD_MSG_TYPE_MAX || !msg_type_names[type])
		return "unknown";
	return msg_type_names[type];
}

/* One component [p, p + n): refuse "", "." and "..". */
static const char *path_component_check(const char *p, size_t n)
{
	if (n == 0)
		return "empty path component";
	if (n == 1 && p[0] == '.')
		return "'.' path component";
	if (n == 2 && p[0] == '.' && p[1] == '.')
		return "'..' path component";
	return NULL;
}

size_t rd_path_first_skip(const char *p, size_t len)
{
	const char *sl = memchr(p, '/', len);

	return sl ? (size_t)(sl - p) + 1 : len;
}

int rd_path_check(const char *p, size_t len, const char **why)
{
	const char *reason = NULL;
	size_t start = 0, i;

	if (!p || len == 0) {
		reason = "empty path";
		goto out;
	}
	if (len > RD_PATH_MAX) {
		reason = "path too long";
		goto out;
	}
	if (memchr(p, '\0', len)) {
		reason = "NUL byte in path";
		goto out;
	}
	if (p[0] == '/') {
		reason = "absolute path";
		goto out;
	}
	if (p[len - 1] == '/') {
		reason = "trailing '/' in path";
		goto out;
	}
	for (i = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		reason = path_component_check(p + start, i - start);
		if (reason)
			goto out;
		start = i + 1;
	}
out:
	if (why)
		*why = reason;
	return reason ? -RD_EPROTO : 0;
}

int rd_name_check(const char *p, size_t len, const char **why)
{
	const char *reason = NULL;

	if (!p || len == 0)
		reason = "empty name";
	else if (len > RD_PARTIAL_DIR_MAX)
		reason = "name too long";
	else if (memchr(p, '\0', len))
		reason = "NUL byte in name";
	else if (memchr(p, '/', len))
		reason = "'/' in a name";
	else
		reason = path_component_check(p, len);
	if (why)
		*why = reason;
	return reason ? -RD_EPROTO : 0;
}

/* One component [p, p + n) of rdcp's own (see rd_path_reserved). */
static int name_reserved(const char *p, size_t n)
{
	size_t pl = sizeof(RD_PARTIAL_PREFIX) - 1, tl = sizeof(RD_TMP_PREFIX) - 1, i;

	if (n >= pl && !memcmp(p, RD_PARTIAL_PREFIX, pl))
		return 1;
	if (n >= sizeof(RD_RANGE_PREFIX) - 1 &&
	    !memcmp(p, RD_RANGE_PREFIX, sizeof(RD_RANGE_PREFIX) - 1))
		return 1;
	/* ".rdcp." NAME "." 16 hex: NAME at least one byte */
	if (n < tl + 2 + RD_TMP_RAND_HEX || memcmp(p, RD_TMP_PREFIX, tl) ||
	    p[n - RD_TMP_RAND_HEX - 1] != '.')
		return 0;
	for (i = n - RD_TMP_RAND_HEX; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

int rd_path_reserved(const char *p, size_t len)
{
	size_t start = 0, i;

	for (i = 0; p && i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		if (name_reserved(p + start, i - start))
			return 1;
		start = i + 1;
	}
	return 0;
}

int rd_proto_versions_overlap(unsigned ver_min, unsigned ver_max)
{
	return ver_min <= ver_max && ver_max >= RD_PROTO_MIN && ver_min <= RD_PROTO_MAX;
}
