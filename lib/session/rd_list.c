// SPDX-License-Identifier: MIT
/*
 * Listing the modules (rd_proto.h section 3, Listings): a client's LIST
 * after the TLS handshake, the server's MODULES. Which modules a peer
 * sees is the server owner's decision (rd_server_cfg.listable), made only
 * now, for a peer that authenticated as it could.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/rd_proto.h"
#include "lib/session/rd_session_priv.h"

/* What the wire carries of a module's name: printable, no '/', bounded. */
static int name_ok(const char *name)
{
	size_t n = strlen(name), i;

	if (!n || n > RD_LIST_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f || name[i] == '/')
			return 0;
	return 1;
}

/* A comment as the wire carries it: control bytes become '?'. */
static size_t clean_comment(char *s)
{
	size_t n = strnlen(s, RD_LIST_COMMENT_MAX), i;

	s[n] = '\0';
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	return n;
}

int rd_server__list_modules(const struct rd_server_cfg *cfg, struct rd_conn *c, char *summary,
			    size_t sumlen, struct rd_err *err)
{
	char(*cm)[RD_LIST_COMMENT_MAX + 1] = NULL;
	struct rd_msg m;
	int i, shown = 0, ret = 0;

	if (cfg->fixed_mode) {
		ret = rd_err_set(err, RD_EUSAGE, 0,
				 "the remote side was started to copy, not to list modules");
		rd_engine_send_error(c, RD_EUSAGE, err->msg);
		rd_conn_flush(c, 1000);
		goto out;
	}
	cm = calloc(RD_LIST_BATCH, sizeof(*cm));
	if (!cm) {
		ret = rd_err_set(err, RD_ENOMEM, 0, "out of memory");
		rd_engine_send_error(c, RD_ENOMEM, err->msg);
		goto out;
	}
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_MODULES;
	for (i = 0; i <= cfg->nmods; i++) {
		const struct rd_module *mod = i < cfg->nmods ? &cfg->mods[i] : NULL;
		unsigned k = m.u.modules.n;

		if (mod && shown < RD_LIST_MODULES_MAX && name_ok(mod->name)) {
			cm[k][0] = '\0';
			if (!cfg->listable ||
			    cfg->listable(cfg->auth_ctx, mod, cm[k], sizeof(cm[k]))) {
				m.u.modules.name[k].ptr = mod->name;
				m.u.modules.name[k].len = (uint16_t)strlen(mod->name);
				m.u.modules.comment[k].ptr = cm[k];
				m.u.modules.comment[k].len = (uint16_t)clean_comment(cm[k]);
				m.u.modules.n++;
				shown++;
			}
		}
		if (mod && m.u.modules.n < RD_LIST_BATCH)
			continue;
		if (!mod)
			m.u.modules.flags = RD_LSF_LAST;
		ret = rd_engine_send_msg_wait(c, &m, err, -1);
		if (ret)
			goto out;
		m.u.modules.n = 0;
	}
	rd_conn_flush(c, 5000);
out:
	snprintf(summary, sumlen, "list modules: %d shown%s%s", shown, ret ? ": failed: " : "",
		 ret ? err->msg : "");
	free(cm);
	return ret;
}

int rd_client__list_modules(struct rd_client *cl, struct rd_conn *c, const struct rd_client_opts *o)
{
	struct rd_msg m;
	const uint8_t *buf;
	size_t len;
	const char *why;
	unsigned total = 0, i;
	int r, last = 0;

	if (rd_conn_info(c)->version < RD_PROTO_LIST)
		return rd_err_set(&cl->err, RD_EVERSION, 0,
				  "%s speaks protocol %u, which cannot list its modules (that "
				  "needs protocol %u): upgrade rdcpd there",
				  cl->info.peer, rd_conn_info(c)->version, RD_PROTO_LIST);
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_LIST;
	r = rd_engine_send_msg_wait(c, &m, &cl->err, -1);
	while (!r && !last) {
		if (rd_conn_recv(c, &buf, &len) != 1) {
			if (cl->e.o.stop && *cl->e.o.stop)
				return rd_err_set(&cl->err, RD_ESTOPPED, 0, "stopped");
			r = rd_conn_poll(c, 1000);
			if (r < 0)
				return rd_err_copy(&cl->err, rd_conn_err(c));
			r = 0;
			continue;
		}
		r = rd_msg_decode(buf, len, &m, &why);
		if (r)
			r = rd_err_set(&cl->err, RD_EPROTO, 0, "%s sent a bad module list: %s",
				       cl->info.peer, why);
		else if (m.hdr.type == RD_MSG_ERROR)
			r = rd_engine_fail_remote(&cl->err, &m.u.error, cl->info.peer);
		else if (m.hdr.type == RD_MSG_CREDIT)
			r = 0;
		else if (m.hdr.type != RD_MSG_MODULES)
			r = rd_err_set(&cl->err, RD_EPROTO, 0, "%s answered LIST with %s",
				       cl->info.peer, rd_msg_type_name(m.hdr.type));
		else if (!m.u.modules.n && !(m.u.modules.flags & RD_LSF_LAST))
			r = rd_err_set(&cl->err, RD_EPROTO, 0,
				       "%s sent an empty module list that is not the last",
				       cl->info.peer);
		else if ((total += m.u.modules.n) > RD_LIST_MODULES_MAX)
			r = rd_err_set(&cl->err, RD_EPROTO, 0, "%s lists more than %u modules",
				       cl->info.peer, RD_LIST_MODULES_MAX);
		for (i = 0; !r && m.hdr.type == RD_MSG_MODULES && i < m.u.modules.n; i++)
			o->module(o->list_ctx, m.u.modules.name[i].ptr, m.u.modules.name[i].len,
				  m.u.modules.comment[i].ptr, m.u.modules.comment[i].len);
		if (!r && m.hdr.type == RD_MSG_MODULES)
			last = !!(m.u.modules.flags & RD_LSF_LAST);
		rd_conn_recv_done(c);
	}
	return r;
}
