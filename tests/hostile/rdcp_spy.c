// SPDX-License-Identifier: MIT
/*
 * rdcp_spy: what an attacker on the network learns from password logins
 * (issue 27 item 5). Never installed.
 *
 *   rdcp_spy tap LPORT HOST PORT OUT
 *	A passive observer on the path of a TCP session: relays one
 *	connection from 127.0.0.1:LPORT to HOST:PORT, both ways, and writes
 *	every byte the client sent to OUT. Prints "tap: listening" once it
 *	listens. Exit 0 when the connection ended.
 *
 *   rdcp_spy guess OUT USER PASSWORD...
 *	An offline attack on what tap captured: is USER in clear, and does
 *	the client's first flight hold anything a guessed password can be
 *	checked against? rdcp before protocol 9 sent a TLS pre-shared key
 *	identity (the user) with a binder keyed by PBKDF2(password, 10,000
 *	rounds): each guess is tested by feeding the captured ClientHello to
 *	a TLS server holding the key of that guess, exactly what an attacker
 *	would do. Prints one line per finding and per guess. Exit 0 when
 *	the capture gives nothing to test guesses against (and no user in
 *	clear), 1 when it does, 2 on a capture it cannot read.
 *
 *   RDCP_PASSWORD=... rdcp_spy login-time HOST PORT N USER1 USER2
 *	A timing attack on user names: N failed logins as USER1 and as
 *	USER2, each timed from the connection request to the refusal (the
 *	password's key is derived before the clock starts, as rdcp does).
 *	One untimed login of each first (the daemon's and this process's
 *	first scrypt page in their 16 MiB), then pairs in alternating order
 *	(1 2, 2 1, 1 2, ...), so a machine slowing down or speeding up over
 *	the run weighs on both users alike. Prints each time, both medians
 *	and how far apart they are. Exit 0 when every login was refused as
 *	unauthenticated, 1 if one got in, 2 on anything else.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"
#include "lib/tls/rd_tls.h"
#include "lib/xport/rd_xport.h"

#define CAPTURE_MAX (16u << 20)
#define TRIES_MAX   101

static void usage(void)
{
	fprintf(stderr, "usage: rdcp_spy tap LPORT HOST PORT OUT\n"
			"       rdcp_spy guess OUT USER PASSWORD...\n"
			"       RDCP_PASSWORD=... rdcp_spy login-time HOST PORT N USER1 USER2\n");
}

/* --- tap --- */

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai, *a;
	int fd = -1;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	for (a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype, 0);
		if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

static int tap(const char *lport, const char *host, const char *port, const char *out)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	static char buf[1 << 16];
	struct pollfd p[2];
	int ls, c, s, one = 1, i, cap;
	ssize_t n;

	cap = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	sin.sin_port = htons((uint16_t)atoi(lport));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (cap < 0 || ls < 0 || bind(ls, (struct sockaddr *)&sin, sizeof(sin)) || listen(ls, 1)) {
		fprintf(stderr, "tap: %s\n", strerror(errno));
		return 2;
	}
	printf("tap: listening on %s\n", lport);
	fflush(stdout);
	c = accept(ls, NULL, NULL);
	s = c >= 0 ? dial(host, port) : -1;
	if (s < 0) {
		fprintf(stderr, "tap: cannot relay to %s:%s\n", host, port);
		return 2;
	}
	p[0] = (struct pollfd){.fd = c, .events = POLLIN};
	p[1] = (struct pollfd){.fd = s, .events = POLLIN};
	for (;;) {
		if (poll(p, 2, 60000) <= 0)
			break;
		for (i = 0; i < 2; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(p[i].fd, buf, sizeof(buf));
			if (n <= 0)
				goto done;
			if (!i && write(cap, buf, (size_t)n) != n)
				goto done;
			if (write(p[1 - i].fd, buf, (size_t)n) != n)
				goto done;
		}
	}
done:
	close(c);
	close(s);
	close(cap);
	printf("tap: the session ended\n");
	return 0;
}

/* --- guess --- */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static unsigned be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* The TLS bytes the client sent: payloads of its RD_MSG_TLS messages, in order. */
static size_t tls_stream(const uint8_t *cap, size_t len, uint8_t *tls)
{
	size_t off = 0, n = 0, flen;

	while (off + RD_TF_HDR_LEN <= len) {
		flen = be32(cap + off + 4);
		if (off + RD_TF_HDR_LEN + flen > len)
			break;
		if (cap[off] == RD_TF_MSG && flen > RD_HDR_LEN &&
		    cap[off + RD_TF_HDR_LEN] == RD_MSG_TLS) {
			memcpy(tls + n, cap + off + RD_TF_HDR_LEN + RD_HDR_LEN, flen - RD_HDR_LEN);
			n += flen - RD_HDR_LEN;
		}
		off += RD_TF_HDR_LEN + flen;
	}
	return n;
}

/* The PSK identity of a ClientHello (record at hello, len bytes), or "". */
static void psk_identity(const uint8_t *rec, size_t len, char *id, size_t cap)
{
	size_t off = 5 + 4 + 2 + 32, end, e, elen;

	id[0] = '\0';
	if (len < off + 1 || rec[0] != 22 || rec[5] != 1)
		return;
	off += 1 + rec[off];
	if (off + 2 > len)
		return;
	off += 2 + be16(rec + off);
	if (off + 1 > len)
		return;
	off += 1 + rec[off];
	if (off + 2 > len)
		return;
	end = off + 2 + be16(rec + off);
	for (e = off + 2; e + 4 <= end && e + 4 <= len; e += 4 + elen) {
		elen = be16(rec + e + 2);
		if (be16(rec + e) == 41 && e + 4 + 4 <= len) { /* pre_shared_key */
			size_t il = be16(rec + e + 6);

			if (e + 8 + il <= len)
				snprintf(id, cap, "%.*s", (int)il, (const char *)rec + e + 8);
			return;
		}
	}
}

static const uint8_t *guess_key;

static int guess_find_cb(SSL *ssl, const unsigned char *id, size_t len, SSL_SESSION **sess)
{
	static const unsigned char aes128gcm[] = {0x13, 0x01};
	SSL_SESSION *s = SSL_SESSION_new();

	(void)id;
	(void)len;
	if (!s || !SSL_SESSION_set1_master_key(s, guess_key, 32) ||
	    !SSL_SESSION_set_cipher(s, SSL_CIPHER_find(ssl, aes128gcm)) ||
	    !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
		SSL_SESSION_free(s);
		return 0;
	}
	*sess = s;
	return 1;
}

/* Does the captured ClientHello's binder verify under the key of this guess? */
static int binder_verifies(const uint8_t *hello, size_t len, const char *user, const char *pw)
{
	char salt[128];
	uint8_t key[32];
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	SSL *s = ctx ? SSL_new(ctx) : NULL;
	BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
	int r, ok;

	snprintf(salt, sizeof(salt), "rdcp-psk:%s", user);
	if (!s || !in || !out ||
	    !PKCS5_PBKDF2_HMAC(pw, (int)strlen(pw), (const unsigned char *)salt, (int)strlen(salt),
			       10000, EVP_sha256(), 32, key))
		return -1;
	guess_key = key;
	SSL_set_psk_find_session_callback(s, guess_find_cb);
	SSL_set_bio(s, in, out);
	SSL_set_accept_state(s);
	BIO_write(in, hello, (int)len);
	r = SSL_do_handshake(s);
	/* a verified binder: the server answers (ServerHello) and waits for more */
	ok = r < 0 && SSL_get_error(s, r) == SSL_ERROR_WANT_READ && BIO_ctrl_pending(out) > 0;
	ERR_clear_error();
	SSL_free(s);
	SSL_CTX_free(ctx);
	return ok;
}

static int guess(const char *path, const char *user, int npw, char **pw)
{
	static uint8_t cap[CAPTURE_MAX], tls[CAPTURE_MAX];
	char id[128];
	size_t len = 0, tlen, off, rl;
	unsigned clear = 0, records = 0;
	FILE *f = fopen(path, "rb");
	int found = 0, i, v;

	if (!f)
		return 2;
	len = fread(cap, 1, sizeof(cap), f);
	fclose(f);
	tlen = tls_stream(cap, len, tls);
	if (tlen < 5 || tls[0] != 22) {
		printf("guess: no TLS handshake from the client in %s (%zu bytes)\n", path, len);
		return 2;
	}
	rl = 5 + be16(tls + 3);
	printf("guess: %zu bytes from the client, %zu of them TLS; its ClientHello %zu bytes\n",
	       len, tlen, rl);
	if (memmem(cap, len, user, strlen(user))) {
		printf("guess: FOUND the user name '%s' in clear\n", user);
		found = 1;
	}
	/* after the ClientHello: only encrypted records (and TLS 1.3's CCS) */
	for (off = rl; off + 5 <= tlen; off += 5 + be16(tls + off + 3)) {
		records++;
		if (tls[off] != 23 && tls[off] != 20)
			clear++;
	}
	printf("guess: %u more client records, %u of them not encrypted\n", records, clear);
	if (clear)
		found = 1;
	psk_identity(tls, rl, id, sizeof(id));
	if (!id[0]) {
		printf("guess: no pre-shared key in the ClientHello: nothing in clear depends on "
		       "the secret\n");
		return found;
	}
	printf("guess: FOUND a pre-shared key named '%s' in the ClientHello\n", id);
	for (i = 0; i < npw; i++) {
		v = binder_verifies(tls, rl, id, pw[i]);
		printf("guess: '%s' %s\n", pw[i],
		       v > 0 ? "VERIFIES: the password is found offline" : "does not verify");
		if (v > 0)
			found = 1;
	}
	return found;
}

/* --- login-time --- */

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int pin_any(void *ctx, const char *fp, struct rd_err *err)
{
	return 0;
}

/* One login: its time in ms, or -1 if it got in, -2 on another failure. */
static double one_login(const char *host, const char *port, struct rd_tls_cfg *tc)
{
	struct rd_conn *c = NULL;
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_err err;
	double t0 = now_ms(), t;
	int r;

	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	req.ver_min = RD_PROTO_MIN;
	req.ver_max = RD_PROTO_MAX;
	co.timeout_ms = 20000;
	rd_err_clear(&err);
	if (rd_conn_connect(&c, host, port, &co, &req, &rep, &err)) {
		printf("login-time: cannot connect: %s\n", err.msg);
		return -2;
	}
	r = rd_conn_start_tls(&c, tc, 20000, &err);
	t = now_ms() - t0;
	rd_conn_close(c);
	if (!r)
		return -1;
	if (r != -RD_EAUTH) {
		printf("login-time: %s\n", err.msg);
		return -2;
	}
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int login_time(const char *host, const char *port, const char *ns, const char *u1,
		      const char *u2)
{
	const char *pass = getenv("RDCP_PASSWORD");
	const char *users[2] = {u1, u2};
	static double t[2][TRIES_MAX];
	struct rd_tls_cfg tc[2];
	double med[2], d;
	int n = atoi(ns), i, j, k;

	if (!pass || n < 1 || n > TRIES_MAX) {
		usage();
		return 2;
	}
	for (k = 0; k < 2; k++) {
		memset(&tc[k], 0, sizeof(tc[k]));
		tc[k].role = RD_TLS_CLIENT;
		tc[k].auth = RD_AUTH_USER;
		tc[k].user = users[k];
		tc[k].pin = pin_any;
		if (rd_tls_login_key(users[k], pass, strlen(pass), tc[k].login_key))
			return 2;
	}
	for (k = 0; k < 2; k++) {
		d = one_login(host, port, &tc[k]); /* warm-up, not counted */
		if (d == -1) {
			printf("login-time: %s GOT IN\n", users[k]);
			return 1;
		}
		if (d < 0)
			return 2;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < 2; j++) {
			k = i % 2 ? 1 - j : j;
			t[k][i] = one_login(host, port, &tc[k]);
			if (t[k][i] == -1) {
				printf("login-time: %s GOT IN\n", users[k]);
				return 1;
			}
			if (t[k][i] < 0)
				return 2;
			printf("login-time: try %d, %s: refused after %.2f ms\n", i + 1, users[k],
			       t[k][i]);
		}
	}
	for (k = 0; k < 2; k++) {
		qsort(t[k], (size_t)n, sizeof(double), cmp_double);
		med[k] = n % 2 ? t[k][n / 2] : (t[k][n / 2 - 1] + t[k][n / 2]) / 2;
	}
	d = (med[0] > med[1] ? med[0] - med[1] : med[1] - med[0]) /
	    (med[0] > med[1] ? med[0] : med[1]);
	printf("login-time: median %s %.2f ms, %s %.2f ms: %.1f %% apart\n", u1, med[0], u2, med[1],
	       100 * d);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 6 && !strcmp(argv[1], "tap"))
		return tap(argv[2], argv[3], argv[4], argv[5]);
	if (argc >= 4 && !strcmp(argv[1], "guess"))
		return guess(argv[2], argv[3], argc - 4, argv + 4);
	if (argc == 7 && !strcmp(argv[1], "login-time"))
		return login_time(argv[2], argv[3], argv[4], argv[5], argv[6]);
	usage();
	return 2;
}
