// SPDX-License-Identifier: MIT
/*
 * The endpoint (rd_metrics.h) on libmicrohttpd: one internal thread
 * (epoll), our own listening socket (so a bind failure names the address
 * and errno), an accept policy for the allow list, and a page rendered
 * into a memory stream per request and copied into the response.
 */
#include "lib/metrics/rd_metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

struct rd_metrics_srv {
	struct MHD_Daemon *mhd;
	struct rd_metrics_cfg cfg;
	unsigned port;
};

static const char not_found[] = "not found: the metrics are on /metrics\n";
static const char not_allowed[] = "only GET and HEAD\n";
static const char failed[] = "the metrics could not be rendered\n";

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
	struct rd_metrics_srv *s = cls;

	if (!s->cfg.allow)
		return MHD_YES;
	return s->cfg.allow(s->cfg.ctx, addr, len) ? MHD_YES : MHD_NO;
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned code, const char *body,
			      size_t len, const char *type)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)(uintptr_t)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	struct rd_metrics_srv *s = cls;
	enum MHD_Result ret;
	char *page = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	(void)version;
	(void)upload;
	/* The first call only announces the request; answer on the second. */
	if (!*state) {
		*state = s;
		return MHD_YES;
	}
	if (*upload_len) {
		*upload_len = 0; /* a body is read and ignored */
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, not_allowed,
			      sizeof(not_allowed) - 1, "text/plain");
	if (strcmp(url, "/metrics"))
		return answer(conn, MHD_HTTP_NOT_FOUND, not_found, sizeof(not_found) - 1,
			      "text/plain");
	f = open_memstream(&page, &len);
	if (!f)
		return answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, failed, sizeof(failed) - 1,
			      "text/plain");
	r = s->cfg.render(s->cfg.ctx, f);
	if (fclose(f))
		r = -1;
	if (r)
		ret = answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, failed, sizeof(failed) - 1,
			     "text/plain");
	else
		ret = answer(conn, MHD_HTTP_OK, page, len, RD_METRICS_CONTENT_TYPE);
	free(page);
	return ret;
}

static const char *addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(s4->sin_port));
	}
	return buf;
}

int rd_metrics_start(struct rd_metrics_srv **out, const struct rd_metrics_cfg *cfg,
		     struct rd_err *err)
{
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	struct rd_metrics_srv *s;
	char where[INET6_ADDRSTRLEN + 16];
	int fd = -1, one = 1, ret;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD;

	*out = NULL;
	addr_text(cfg->addr, where, sizeof(where));
	s = calloc(1, sizeof(*s));
	if (!s)
		return rd_err_set(err, RD_ENOMEM, 0, "metrics: out of memory");
	s->cfg = *cfg;
	if (!s->cfg.max_clients)
		s->cfg.max_clients = RD_METRICS_CLIENTS_DEFAULT;
	if (!s->cfg.timeout_s)
		s->cfg.timeout_s = RD_METRICS_TIMEOUT_DEFAULT;
	fd = socket(cfg->addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		ret = rd_err_set(err, RD_ESYS, errno, "metrics listen %s: socket", where);
		goto fail;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (cfg->addr->sa_family == AF_INET6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		flags |= MHD_USE_IPv6;
	}
	if (bind(fd, cfg->addr, cfg->addrlen) || listen(fd, 16)) {
		ret = rd_err_set(err, RD_ESYS, errno, "metrics listen %s", where);
		goto fail;
	}
	if (!getsockname(fd, (struct sockaddr *)&bound, &blen))
		s->port =
		    ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						      : ((struct sockaddr_in *)&bound)->sin_port);
	/* No MHD_USE_ERROR_LOG: the library writes nothing of its own. */
	s->mhd = MHD_start_daemon(flags, 0, on_accept, s, on_request, s, MHD_OPTION_LISTEN_SOCKET,
				  fd, MHD_OPTION_CONNECTION_LIMIT, s->cfg.max_clients,
				  MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.timeout_s,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				  MHD_OPTION_END);
	if (!s->mhd) {
		ret = rd_err_set(err, RD_ESYS, 0,
				 "metrics listen %s: the HTTP server did not start", where);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(s);
	return ret;
}

unsigned rd_metrics_port(const struct rd_metrics_srv *s)
{
	return s ? s->port : 0;
}

void rd_metrics_stop(struct rd_metrics_srv *s)
{
	if (!s)
		return;
	/* closes the listening socket too (it was handed over) */
	MHD_stop_daemon(s->mhd);
	free(s);
}

void rd_prom_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void rd_prom_value(FILE *f, const char *v)
{
	fputc('"', f);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

void rd_prom_sample(FILE *f, const char *name, const char *label, const char *v, uint64_t n)
{
	fputs(name, f);
	if (label) {
		fprintf(f, "{%s=", label);
		rd_prom_value(f, v);
		fputc('}', f);
	}
	fprintf(f, " %llu\n", (unsigned long long)n);
}
