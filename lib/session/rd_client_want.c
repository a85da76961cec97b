// SPDX-License-Identifier: MIT
/*
 * The client of a ranged pull (rd_proto.h section 6, rdcp-mpi): it sends
 * the list of what it wants (WANT) and takes only those entries, in that
 * order; anything else the server sends is a protocol error.
 */
#include "lib/session/rd_session.h"
#include "lib/session/rd_session_priv.h"

#include <string.h>

int rd_client__send_wants(struct rd_client *cl, struct rd_conn *c, const struct rd_client_opts *o)
{
	uint8_t raw[RD_MSG_MAX - RD_HDR_LEN - 11];
	struct rd_msg m;
	size_t i = 0, len;
	int ret;

	do {
		memset(&m, 0, sizeof(m));
		m.hdr.type = RD_MSG_WANT;
		m.u.want.job = o->want_job;
		len = 0;
		while (i < o->nwants && m.u.want.n < RD_WANT_BATCH &&
		       !rd_want_put(raw, sizeof(raw), &len, &o->wants[i])) {
			m.u.want.n++;
			i++;
		}
		if (i < o->nwants && !m.u.want.n)
			return rd_err_set(&cl->err, RD_EUSAGE, 0, "wanted entry %zu is not valid",
					  i);
		if (i == o->nwants)
			m.u.want.flags = RD_WF_END;
		m.u.want.raw = raw;
		m.u.want.rawlen = len;
		ret = rd_engine_send_msg_wait(c, &m, &cl->err, -1);
		if (ret)
			return ret;
	} while (i < o->nwants);
	return 0;
}

/* Only what was wanted, in order (the server skips some with a NOTE). */
int rd_client__want_accept(void *ctx, const struct rd_msg_file *f)
{
	struct rd_want_state *ws = ctx;
	size_t i;

	if (f->type != RD_FT_REG || (f->flags & (RD_FF_ROOT | RD_FF_COMMIT)))
		return -1;
	for (i = ws->next; i < ws->n; i++) {
		const struct rd_want_item *w = &ws->w[i];

		if (w->path.len == f->path.len && !memcmp(w->path.ptr, f->path.ptr, f->path.len) &&
		    !(f->flags & RD_FF_RANGE) == (w->kind == RD_WANT_WHOLE)) {
			ws->next = i + 1;
			return 0;
		}
	}
	return -1;
}
