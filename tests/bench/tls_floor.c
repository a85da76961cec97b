// SPDX-License-Identifier: MIT
/*
 * The floor OpenSSL 3 puts under any TLS 1.3 client's start-up, with no
 * network and nothing of rdcp: load libssl and libcrypto, initialise
 * (the system's openssl.cnf included), fetch SHA-256 (a chunk digest), make
 * an SSL_CTX (which fetches every cipher, digest, group and signature
 * algorithm the TLS stack may use), one X25519 key pair (a ClientHello's
 * key share) and one SSL. tests/e2e/many_guest.sh times it beside
 * `rping -C 1` and a tiny rdcp push (issue 14): whatever rdcp does, its
 * start-up cannot be less than rping's plus this.
 *
 * Usage: tls_floor [STAGE]   STAGE 0 (load only) .. 5 (all, the default)
 */
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int stage = argc > 1 ? atoi(argv[1]) : 5;
	SSL_CTX *ctx = NULL;
	EVP_PKEY *key = NULL;
	EVP_MD *md = NULL;
	SSL *ssl = NULL;
	int ret = 1;

	if (stage >= 1 && !OPENSSL_init_ssl(0, NULL))
		goto out;
	if (stage >= 2 && !(md = EVP_MD_fetch(NULL, "SHA256", NULL)))
		goto out;
	if (stage >= 3 && !(ctx = SSL_CTX_new(TLS_client_method())))
		goto out;
	if (stage >= 4 && !(key = EVP_PKEY_Q_keygen(NULL, NULL, "X25519")))
		goto out;
	if (stage >= 5 && !(ssl = SSL_new(ctx)))
		goto out;
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "tls_floor: OpenSSL failed at stage %d\n", stage);
	SSL_free(ssl);
	EVP_PKEY_free(key);
	SSL_CTX_free(ctx);
	EVP_MD_free(md);
	return ret;
}
