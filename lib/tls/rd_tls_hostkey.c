// SPDX-License-Identifier: MIT
/*
 * A daemon's host key (rd_tls_cfg.host_key_file): the key password logins
 * authenticate the server by when it has no "tls certificate". Made at
 * first start (Ed25519, PEM, mode 0600, its directory 0700 if missing),
 * read with the secrets file's strictness afterwards (a regular file, not
 * a symlink, of the daemon's user, nobody else may read it), and shown in
 * a self-signed certificate made anew for each configuration load: what
 * clients pin is the key (its SHA-256), not the certificate.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "lib/tls/rd_tls_priv.h"

#define KEY_FILE_MAX (16u << 10)

static int key_err(struct rd_tls *t, int errnum, const char *path, const char *what)
{
	return rd_err_set(&t->err, RD_EUSAGE, errnum, "host key %s: %s", path, what);
}

/* Read an existing key: 0, 1 when there is none yet, or an error on t->err. */
static int load_key(struct rd_tls *t, const char *path, EVP_PKEY **out)
{
	char buf[KEY_FILE_MAX + 1], msg[160];
	struct stat st;
	ssize_t n;
	BIO *b;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0)
		return key_err(t, errno == ELOOP ? 0 : errno, path,
			       errno == ELOOP ? "is a symbolic link" : "cannot open");
	if (fstat(fd, &st) < 0) {
		ret = key_err(t, errno, path, "fstat");
	} else if (!S_ISREG(st.st_mode)) {
		ret = key_err(t, 0, path, "not a regular file");
	} else if (st.st_uid != geteuid()) {
		snprintf(msg, sizeof(msg), "owned by uid %u, not by the daemon's user (uid %u)",
			 (unsigned)st.st_uid, (unsigned)geteuid());
		ret = key_err(t, 0, path, msg);
	} else if (st.st_mode & 077) {
		snprintf(msg, sizeof(msg),
			 "mode %04o lets other users read or change it; make it 0600",
			 (unsigned)(st.st_mode & 07777));
		ret = key_err(t, 0, path, msg);
	}
	if (ret)
		goto out;
	n = read(fd, buf, sizeof(buf));
	if (n < 0 || (size_t)n > KEY_FILE_MAX) {
		ret = key_err(t, n < 0 ? errno : 0, path, n < 0 ? "read" : "too large for a key");
		goto out;
	}
	b = BIO_new_mem_buf(buf, (int)n);
	*out = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	if (!*out)
		ret = key_err(t, 0, path, "not a PEM private key");
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	close(fd);
	return ret;
}

/* First start: a new Ed25519 key, written O_EXCL: 0, 1 when another start
 * made the file first (read it then), or an error on t->err. */
static int make_key(struct rd_tls *t, const char *path, EVP_PKEY **out)
{
	char dir[PATH_MAX];
	BUF_MEM *mem = NULL;
	BIO *b = NULL;
	int fd = -1, ret = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	if (mkdir(dirname(dir), 0700) < 0 && errno != EEXIST)
		return key_err(t, errno, path, "cannot make its directory");
	*out = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	b = BIO_new(BIO_s_mem());
	if (!*out || !b || !PEM_write_bio_PrivateKey(b, *out, NULL, NULL, 0, NULL, NULL)) {
		ret = rd_tls_fail(t, RD_ENOMEM, "making the host key");
		goto out;
	}
	BIO_get_mem_ptr(b, &mem);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = errno == EEXIST ? 1 : key_err(t, errno, path, "cannot create");
		goto out;
	}
	if (write(fd, mem->data, mem->length) != (ssize_t)mem->length || fsync(fd) < 0) {
		ret = key_err(t, errno, path, "cannot write");
		unlink(path);
	}
out:
	if (fd >= 0)
		close(fd);
	BIO_free(b);
	if (ret) {
		EVP_PKEY_free(*out);
		*out = NULL;
	}
	return ret;
}

/* A self-signed certificate around k: CN rdcpd, valid from yesterday for 100 years. */
static X509 *self_signed(EVP_PKEY *k)
{
	X509 *x = X509_new();
	X509_NAME *name;
	ASN1_INTEGER *sn;
	unsigned char serial[16];
	BIGNUM *bn = NULL;
	int ok;

	if (!x || RAND_bytes(serial, sizeof(serial)) != 1) {
		X509_free(x);
		return NULL;
	}
	serial[0] &= 0x7f; /* positive */
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	sn = X509_get_serialNumber(x);
	name = X509_get_subject_name(x);
	ok = bn && BN_to_ASN1_INTEGER(bn, sn) && X509_set_version(x, 2) &&
	     X509_gmtime_adj(X509_getm_notBefore(x), -86400) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), 100L * 365 * 86400) &&
	     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"rdcpd",
					-1, -1, 0) &&
	     X509_set_issuer_name(x, name) && X509_set_pubkey(x, k) && X509_sign(x, k, NULL) > 0;
	BN_free(bn);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int rd_tls_use_host_key(struct rd_tls *t, const char *path)
{
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	int ret, tries;

	for (tries = 0; tries < 2; tries++) {
		ret = load_key(t, path, &k);
		if (ret != 1)
			break;
		ret = make_key(t, path, &k);
		if (ret != 1)
			break;
	}
	if (ret)
		return ret < 0 ? ret : key_err(t, 0, path, "made and removed while starting");
	x = self_signed(k);
	if (!x || SSL_CTX_use_certificate(t->ctx, x) != 1 || SSL_CTX_use_PrivateKey(t->ctx, k) != 1)
		ret = rd_tls_fail(t, RD_ENOMEM, "the host key's certificate");
	X509_free(x);
	EVP_PKEY_free(k);
	return ret;
}
