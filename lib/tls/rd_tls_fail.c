// SPDX-License-Identifier: MIT
/*
 * An OpenSSL failure turned into a sentence on t->err, for every file of
 * lib/tls. The bottom of lib/tls: it calls nothing of the others, so
 * rd_tls.c (the session), rd_tls_ctx.c (context, PSK callbacks),
 * rd_tls_hostkey.c and rd_tls_login.c all call down to it and none calls
 * back up.
 */
#include "lib/tls/rd_tls_priv.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "lib/proto/rd_proto.h"

static const char *auth_words(const struct rd_tls *t)
{
	switch (t->cfg.auth) {
	case RD_AUTH_USER:
		return "the secret of that user was refused (wrong secret, or no such user there)";
	case RD_AUTH_SSH:
		return "the one-time secret from the ssh channel was refused";
	case RD_AUTH_ANON:
		return "anonymous access was refused (give USER@HOST:: and a password, or --ca)";
	default:
		return "authentication was refused";
	}
}

int rd_tls_fail(struct rd_tls *t, int status, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	int reason = ERR_GET_REASON(e);
	long vr;
	char ossl[256] = "";

	if (e)
		ERR_error_string_n(e, ossl, sizeof(ossl));
	ERR_clear_error();
	if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && t->ssl) {
		vr = SSL_get_verify_result(t->ssl);
		return rd_err_set(&t->err, RD_EAUTH, 0,
				  "TLS with %s: the certificate was not accepted: %s%s",
				  t->peer_name, X509_verify_cert_error_string(vr),
				  t->cfg.role == RD_TLS_CLIENT && !t->cfg.ca_file
				      ? " (give the CA that signed it with --ca FILE)"
				      : "");
	}
	/* A refused PSK binder: OpenSSL's server answers illegal_parameter,
	 * RFC 8446 says decrypt_error; either means "not that key". */
	if ((reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR ||
	     reason == SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER) &&
	    t->cfg.role == RD_TLS_CLIENT && t->cfg.auth != RD_AUTH_CERT)
		return rd_err_set(&t->err, RD_EAUTH, 0, "authentication failed at %s: %s",
				  t->peer_name, auth_words(t));
	if (reason == SSL_R_BINDER_DOES_NOT_VERIFY && t->psk_asked == RD_AUTH_USER)
		return rd_err_set(&t->err, RD_EAUTH, 0,
				  "authentication failed from %s: user %s logs in the way of rdcp "
				  "before protocol %d (a key derived from the secret, which anyone "
				  "who sees the handshake can test guesses against); refused: "
				  "upgrade that rdcp",
				  t->peer_name, t->psk_user, RD_PROTO_LOGIN);
	if (reason == SSL_R_BINDER_DOES_NOT_VERIFY)
		return rd_err_set(
		    &t->err, RD_EAUTH, 0,
		    "authentication failed from %s: wrong secret or unknown user (%s)",
		    t->peer_name,
		    t->psk_asked == RD_AUTH_SSH	   ? "not the ssh channel's one-time secret"
		    : t->psk_asked == RD_AUTH_ANON ? "anonymous access is not allowed here"
						   : "an unknown TLS identity");
	/* A password login to a server with no key for it (no certificate). */
	if (reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE && t->cfg.role == RD_TLS_CLIENT &&
	    t->cfg.auth == RD_AUTH_USER)
		return rd_err_set(&t->err, RD_EAUTH, 0,
				  "%s takes no password logins (no secrets file there, or an "
				  "rdcpd older than protocol %d)",
				  t->peer_name, RD_PROTO_LOGIN);
	return rd_err_set(&t->err, status, 0, "TLS with %s: %s%s%s", t->peer_name, what,
			  ossl[0] ? ": " : "", ossl);
}
