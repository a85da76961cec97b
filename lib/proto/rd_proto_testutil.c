// SPDX-License-Identifier: MIT
#include "lib/proto/rd_proto_testutil.h"

#include <string.h>

static char long_text[RD_MSG_TEXT_MAX];
static char long_path[RD_PATH_MAX];
static char long_digest[RD_DIGEST_NAME_MAX];
static char long_name[RD_PARTIAL_DIR_MAX];

static struct rd_str str_of(const char *s)
{
	struct rd_str r = {s, (uint16_t)strlen(s)};

	return r;
}

static struct rd_str str_n(const char *s, size_t n)
{
	struct rd_str r = {s, (uint16_t)n};

	return r;
}

static void fill_statics(void)
{
	size_t i;

	memset(long_text, 'x', sizeof(long_text));
	memset(long_digest, 'd', sizeof(long_digest));
	memset(long_name, 'p', sizeof(long_name));
	/* "aaa.../aaa...": components of 100 bytes. */
	for (i = 0; i < sizeof(long_path); i++)
		long_path[i] = (i % 101 == 100) ? '/' : 'a';
}

static void sample_open(struct rd_msg_open *o, int variant)
{
	static const char *const paths[] = {"home", "home/a b/c", "data/\xff\xfe/x", "m"};
	uint16_t i;

	o->mode = variant ? RD_MODE_PULL : RD_MODE_PUSH;
	/* DESTS is a PUSH's: the test of its block builds its own (proto_test.c) */
	o->flags = variant ? RD_OF_KNOWN & ~RD_OF_DESTS
			   : RD_OF_RECURSIVE | RD_OF_PRESERVE | RD_OF_PARTIAL_DIR | RD_OF_WINDOW;
	o->chunk_size = variant ? RD_CHUNK_MAX : RD_CHUNK_DEFAULT;
	o->digest = variant ? str_n(long_digest, sizeof(long_digest)) : str_of("sha256");
	/* Extreme variant: every slot used, short paths so it fits. */
	o->npaths = variant ? RD_OPEN_PATHS_MAX : 4;
	for (i = 0; i < o->npaths; i++)
		o->paths[i] = str_of(paths[i % 4]);
	o->partial_dir = variant ? str_n(long_name, sizeof(long_name)) : str_of(".rdcp-partials");
	o->window = variant ? RD_WINDOW_MAX : RD_WINDOW_FILES * 4;
	if (!variant)
		return; /* no SELECT */
	o->sel.compare = RD_CMP_SIZE;
	o->sel.rules = RD_SEL_KNOWN & ~(RD_SEL_DEST_DIR | RD_SEL_MKPATH); /* a PULL */
	o->sel.modify_window = INT32_MAX;
	o->sel.min_size = UINT64_MAX - 1;
	o->sel.max_size = RD_SIZE_NONE;
	for (i = 0; i < o->npaths; i++) {
		o->sel.pflags[i] = RD_PF_CONTENTS;
		o->sel.skip[i] = i % 4 == 1 ? 4 : 0; /* "home/a b/c": skip "a b/" */
	}
	o->sel.nrules = RD_RULES_MAX;
	o->sel.nnames = RD_NAMES_MAX;
	o->mir.flags = RD_MF_KNOWN & ~(RD_MF_DEL_BEFORE | RD_MF_REMOVE_SRC);
	o->mir.max_delete = INT64_MAX;
}

/* RULES: variant 0 two filter rules; 1: --files-from names up to the brim */
static void sample_rules(struct rd_msg_rules *m, int variant)
{
	static uint8_t raw[RD_MSG_MAX];
	size_t len = 0;

	m->kind = variant ? RD_RULES_NAMES : RD_RULES_FILTER;
	if (!variant) {
		rd_rules_put(raw, sizeof(raw), &len, RD_RULES_FILTER, "- *.o", 5);
		rd_rules_put(raw, sizeof(raw), &len, RD_RULES_FILTER, ": /.rsync-filter", 16);
		m->n = 2;
	} else {
		rd_rules_put(raw, sizeof(raw), &len, RD_RULES_NAMES, long_path, 3000);
		rd_rules_put(raw, sizeof(raw), &len, RD_RULES_NAMES, "a/b", 3);
		m->n = 2;
	}
	m->raw = raw;
	m->rawlen = len;
}

/* Variant 0: an access ACL; 1: the largest sparse map. */
static void sample_meta(struct rd_msg_meta *m, int variant)
{
	static const struct rd_acl_ent acl[] = {{RD_ACL_USER_OBJ, 6, 0},
						{RD_ACL_USER, 5, 0xffffffffu},
						{RD_ACL_GROUP_OBJ, 4, 0},
						{RD_ACL_MASK, 7, 0},
						{RD_ACL_OTHER, 0, 0}};
	static struct rd_extent ext[RD_SPARSE_MAX];
	unsigned i;

	m->id = variant ? 0xffffffffu : 7;
	m->flags = variant ? RD_MF_LAST : 0;
	if (!variant) {
		m->kind = RD_META_ACL;
		m->acl_type = RD_ACL_ACCESS;
		m->n = 5;
		m->acl = acl;
		return;
	}
	for (i = 0; i < RD_SPARSE_MAX; i++) {
		ext[i].off = (uint64_t)i << 40;
		ext[i].len = i == RD_SPARSE_MAX - 1 ? (1ull << 40) : 4096;
	}
	m->kind = RD_META_SPARSE;
	m->n = RD_SPARSE_MAX;
	m->ext = ext;
}

static void sample_file(struct rd_msg_file *f, int variant)
{
	f->id = variant ? 0xffffffffu : 1;
	f->type = variant ? RD_FT_SYMLINK : RD_FT_REG;
	f->flags = variant ? RD_FF_ROOT | RD_FF_POST : RD_FF_ROOT;
	f->mode = variant ? 0xffffffffu : 0100644;
	f->uid = variant ? 0xffffffffu : 1000;
	f->gid = variant ? 0xfffffffeu : 1000;
	f->size = variant ? UINT64_MAX : 12345;
	f->mtime_sec = variant ? INT64_MIN : 1700000000;
	f->mtime_nsec = variant ? 999999999u : 5;
	if (variant) {
		f->path = str_n(long_path, 3000);
		f->target = str_n("../\xff\x01 x", 7);
	} else {
		f->path = str_of("dir/file.txt");
	}
}

/* FILES: variant 0 one entry; 1: the long variant-1 FILE and then 3 short ones */
static void sample_files(struct rd_msg_files *m, int variant)
{
	static uint8_t raw[RD_MSG_MAX];
	struct rd_msg_file f;
	size_t len = 0;
	unsigned i;

	memset(&f, 0, sizeof(f));
	sample_file(&f, variant);
	rd_files_put(raw, sizeof(raw), &len, &f);
	for (i = 0; variant && i < 3; i++) {
		memset(&f, 0, sizeof(f));
		sample_file(&f, 0);
		f.id = i;
		rd_files_put(raw, sizeof(raw), &len, &f);
	}
	m->n = variant ? 4 : 1;
	m->raw = raw;
	m->rawlen = len;
}

/*
 * FILEZ: variant 0 one entry; 1: the long variant-1 FILE (a target), then
 * 3 that keep most of its path and fields, one with a 64-bit size
 */
static void sample_filez(struct rd_msg_files *m, int variant)
{
	static uint8_t raw[RD_MSG_MAX];
	static char path[3][3010];
	struct rd_msg_file f;
	struct rd_filez z;
	size_t len = 0;
	unsigned i;

	rd_filez_start(&z);
	memset(&f, 0, sizeof(f));
	sample_file(&f, variant);
	if (variant)
		f.id = 0xffffffffu - 3; /* the last one's id is the highest */
	rd_filez_put(&z, raw, sizeof(raw), &len, &f);
	for (i = 0; variant && i < 3; i++) {
		f.type = RD_FT_REG;
		f.flags = 0;
		memcpy(path[i], f.path.ptr, f.path.len);
		path[i][f.path.len - 1] = (char)('a' + i);
		f.path.ptr = path[i];
		f.id++;
		f.target.len = 0;
		f.target.ptr = NULL;
		f.size = i == 1 ? UINT64_MAX : i;
		f.mtime_nsec = i;
		rd_filez_put(&z, raw, sizeof(raw), &len, &f);
	}
	m->n = (uint16_t)z.n;
	m->id = z.id;
	m->raw = raw;
	m->rawlen = len;
}

static void sample_dones(struct rd_msg_dones *m, int variant)
{
	unsigned i;

	m->n = variant ? RD_BATCH_WIDE : 1;
	for (i = 0; i < m->n; i++) {
		m->id[i] = variant ? 0xffffffffu - i : 9;
		m->bytes[i] = variant ? UINT64_MAX - i : 4096;
	}
}

static void sample_data(struct rd_msg_data *d, int variant)
{
	uint8_t i;

	d->id = variant ? 0xffffffffu : 3;
	d->kind = variant ? RD_GET_SUM : RD_GET_DATA;
	d->slot = variant ? 0xffffffffu : 7;
	d->chunk = variant ? UINT64_MAX : 42;
	d->len = variant ? 0xffffffffu : 4096;
	d->seq = variant ? UINT64_MAX : 78;
	d->dlen = variant ? RD_DIGEST_MAX : 32;
	for (i = 0; i < d->dlen; i++)
		d->digest[i] = (uint8_t)(i * 37 + 1);
}

static void sample_payload(struct rd_msg *m, int v)
{
	unsigned i;

	switch (m->hdr.type) {
	case RD_MSG_OPEN:
		sample_open(&m->u.open, v);
		break;
	case RD_MSG_OPEN_OK:
		m->u.open_ok.flags = v ? 0xffffffffu : RD_OF_RECURSIVE;
		m->u.open_ok.chunk_size = v ? RD_CHUNK_MIN : RD_CHUNK_DEFAULT;
		m->u.open_ok.digest = v ? str_of("none") : str_of("blake2b512");
		m->u.open_ok.window = v ? RD_WINDOW_MAX : 0;
		break;
	case RD_MSG_ERROR:
		m->u.error.code = v ? 0xffff : 11;
		m->u.error.text =
		    v ? str_n(long_text, sizeof(long_text)) : str_of("no such module");
		break;
	case RD_MSG_FILE:
		sample_file(&m->u.file, v);
		break;
	case RD_MSG_END:
		m->u.end.nfiles = v ? 0xffffffffu : 17;
		break;
	case RD_MSG_GET:
		m->u.get.id = v ? 0xffffffffu : 2;
		m->u.get.kind = v ? RD_GET_SUM : RD_GET_DATA;
		m->u.get.slot = v ? 0xffffffffu : 1;
		m->u.get.chunk = v ? UINT64_MAX : 9;
		m->u.get.addr = v ? UINT64_MAX : 0x7f0000001000ull;
		m->u.get.rkey = v ? 0xffffffffu : 0x1234;
		m->u.get.len = v ? 0xffffffffu : RD_CHUNK_DEFAULT;
		m->u.get.seq = v ? UINT64_MAX : 77;
		/* variant 1: a receiver on every rail it may have */
		m->u.get.nx = v ? RD_RAILS_MAX - 1 : 0;
		for (i = 0; i < m->u.get.nx; i++)
			m->u.get.xrkey[i] = 0xabc00000u + i;
		break;
	case RD_MSG_RAILS:
		m->u.rails.n = v ? RD_RAILS_MAX - 1 : 1;
		for (i = 0; i < m->u.rails.n; i++) {
			m->u.rails.a[i].family = i % 2 ? 6 : 4;
			memset(m->u.rails.a[i].addr, 0, 16);
			m->u.rails.a[i].addr[0] = (uint8_t)(10 + i);
			if (i % 2)
				memset(m->u.rails.a[i].addr, 0xfd - (int)i, 16);
		}
		break;
	case RD_MSG_LANES:
		for (i = 0; i < RD_LANE_NONCE_LEN; i++)
			m->u.lanes.nonce[i] = (uint8_t)(v ? 0xff - i : i + 1);
		break;
	case RD_MSG_DATA:
		sample_data(&m->u.data, v);
		break;
	case RD_MSG_CHUNK_ERR:
		m->u.chunk_err.id = v ? 0xffffffffu : 4;
		m->u.chunk_err.chunk = v ? UINT64_MAX : 1;
		m->u.chunk_err.code = v ? 0xffff : 2;
		m->u.chunk_err.text = v ? str_n(long_text, sizeof(long_text)) : str_of("read: EIO");
		break;
	case RD_MSG_DONE:
		m->u.done.id = v ? 0xffffffffu : 5;
		m->u.done.status = v ? 0xffff : 0;
		m->u.done.bytes = v ? UINT64_MAX : 1 << 20;
		m->u.done.text = v ? str_n(long_text, sizeof(long_text)) : str_of("");
		break;
	case RD_MSG_NOTE:
		m->u.note.code = v ? 0xffff : 12;
		m->u.note.path = v ? str_n("/\0..//\n", 7) : str_of("skipped/fifo");
		m->u.note.text =
		    v ? str_n(long_text, sizeof(long_text)) : str_of("not a regular file");
		break;
	case RD_MSG_META:
		sample_meta(&m->u.meta, v);
		break;
	case RD_MSG_FILES:
		sample_files(&m->u.files, v);
		break;
	case RD_MSG_FILEZ:
		sample_filez(&m->u.files, v);
		break;
	case RD_MSG_DONES:
		sample_dones(&m->u.dones, v);
		break;
	case RD_MSG_RULES:
		sample_rules(&m->u.rules, v);
		break;
	case RD_MSG_MODULES:
		/* v: a full batch of the longest names and comments, not the last */
		m->u.modules.flags = v ? 0 : RD_LSF_LAST;
		m->u.modules.n = v ? RD_LIST_BATCH : 2;
		for (i = 0; i < m->u.modules.n; i++) {
			m->u.modules.name[i] =
			    v ? str_n(long_text, RD_LIST_NAME_MAX) : str_of(i ? "data" : "pub lic");
			m->u.modules.comment[i] = v ? str_n(long_text, RD_LIST_COMMENT_MAX)
						    : str_of(i ? "" : "a comment");
		}
		break;
	case RD_MSG_DELETED:
		/* v: four of the longest paths with the longest texts (it fits) */
		m->u.deleted.n = v ? 4 : 3;
		for (i = 0; i < m->u.deleted.n; i++) {
			m->u.deleted.flags[i] = v ? RD_DLF_KNOWN : (uint8_t)(i == 1 ? RD_DLF_DIR : 0);
			m->u.deleted.path[i] =
			    v ? str_n(long_path, 2048) : str_of(i == 1 ? "dir" : "dir/old file");
			m->u.deleted.text[i] = v ? str_n(long_text, RD_MSG_TEXT_MAX) : str_of("");
		}
		break;
	case RD_MSG_FIN:
		m->u.fin.files_ok = v ? 0xffffffffu : 10;
		m->u.fin.files_failed = v ? 0xffffffffu : 1;
		m->u.fin.bytes = v ? UINT64_MAX : 123456789;
		break;
	default: /* CREDIT */
		break;
	}
}

bool rd_msg_sample(struct rd_msg *msg, uint8_t type, int variant)
{
	memset(msg, 0, sizeof(*msg));
	if (type == 0 || type >= RD_MSG_TYPE_MAX || type == RD_MSG_TLS)
		return false;
	if (!long_text[0])
		fill_statics();
	msg->hdr.type = type;
	msg->hdr.credits = variant ? 0xffff : 3;
	sample_payload(msg, variant);
	return true;
}

static bool str_eq(const struct rd_str *a, const struct rd_str *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->ptr, b->ptr, a->len) == 0);
}

static bool dests_eq(const struct rd_dests *a, const struct rd_dests *b)
{
	unsigned i;

	if (a->flags != b->flags || a->kind != b->kind || a->ndests != b->ndests ||
	    a->ndests > RD_DESTS_MAX || !str_eq(&a->backup_dir, &b->backup_dir) ||
	    !str_eq(&a->suffix, &b->suffix))
		return false;
	for (i = 0; i < a->ndests; i++)
		if (!str_eq(&a->dirs[i], &b->dirs[i]))
			return false;
	return true;
}

static bool open_eq(const struct rd_msg_open *a, const struct rd_msg_open *b)
{
	uint16_t i;

	if (a->mode != b->mode || a->flags != b->flags || a->chunk_size != b->chunk_size ||
	    !str_eq(&a->digest, &b->digest) || a->npaths != b->npaths ||
	    a->npaths > RD_OPEN_PATHS_MAX)
		return false;
	for (i = 0; i < a->npaths; i++) {
		if (!str_eq(&a->paths[i], &b->paths[i]))
			return false;
	}
	if (!str_eq(&a->partial_dir, &b->partial_dir) || a->window != b->window ||
	    !dests_eq(&a->dests, &b->dests))
		return false;
	return a->sel.compare == b->sel.compare && a->sel.rules == b->sel.rules &&
	       a->sel.modify_window == b->sel.modify_window && a->sel.min_size == b->sel.min_size &&
	       a->sel.max_size == b->sel.max_size &&
	       !memcmp(a->sel.pflags, b->sel.pflags, sizeof(a->sel.pflags)) &&
	       !memcmp(a->sel.skip, b->sel.skip, sizeof(a->sel.skip)) &&
	       a->sel.nrules == b->sel.nrules && a->sel.nnames == b->sel.nnames &&
	       a->mir.flags == b->mir.flags && a->mir.max_delete == b->mir.max_delete;
}

static bool file_eq(const struct rd_msg_file *a, const struct rd_msg_file *b)
{
	return a->id == b->id && a->type == b->type && a->flags == b->flags && a->mode == b->mode &&
	       a->uid == b->uid && a->gid == b->gid && a->size == b->size &&
	       a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec &&
	       str_eq(&a->path, &b->path) && str_eq(&a->target, &b->target);
}

static bool get_eq(const struct rd_msg_get *a, const struct rd_msg_get *b)
{
	return a->id == b->id && a->kind == b->kind && a->slot == b->slot && a->chunk == b->chunk &&
	       a->addr == b->addr && a->rkey == b->rkey && a->len == b->len && a->seq == b->seq &&
	       a->nx == b->nx && !memcmp(a->xrkey, b->xrkey, a->nx * sizeof(a->xrkey[0]));
}

static bool data_eq(const struct rd_msg_data *a, const struct rd_msg_data *b)
{
	return a->id == b->id && a->kind == b->kind && a->slot == b->slot && a->chunk == b->chunk &&
	       a->len == b->len && a->seq == b->seq && a->dlen == b->dlen &&
	       a->dlen <= RD_DIGEST_MAX && memcmp(a->digest, b->digest, a->dlen) == 0;
}

static bool meta_eq(const struct rd_msg_meta *a, const struct rd_msg_meta *b)
{
	unsigned i;

	if (a->id != b->id || a->kind != b->kind || a->flags != b->flags || a->n != b->n ||
	    a->acl_type != b->acl_type || !str_eq(&a->name, &b->name) || a->vlen != b->vlen ||
	    (a->vlen && memcmp(a->value, b->value, a->vlen)))
		return false;
	/* entries are read as their kind says: the sizes differ (6 and 16 bytes) */
	for (i = 0; i < a->n; i++) {
		if (a->kind == RD_META_ACL) {
			struct rd_acl_ent x = rd_meta_acl(a, i), y = rd_meta_acl(b, i);

			if (x.tag != y.tag || x.perm != y.perm || x.id != y.id)
				return false;
		} else if (a->kind == RD_META_SPARSE) {
			struct rd_extent e = rd_meta_extent(a, i), f = rd_meta_extent(b, i);

			if (e.off != f.off || e.len != f.len)
				return false;
		}
	}
	return true;
}

bool rd_msg_equal(const struct rd_msg *a, const struct rd_msg *b)
{
	if (a->hdr.type != b->hdr.type || a->hdr.credits != b->hdr.credits)
		return false;
	switch (a->hdr.type) {
	case RD_MSG_CREDIT:
	case RD_MSG_LIST:
		return true;
	case RD_MSG_MODULES:
		if (a->u.modules.flags != b->u.modules.flags || a->u.modules.n != b->u.modules.n)
			return false;
		for (unsigned i = 0; i < a->u.modules.n; i++)
			if (!str_eq(&a->u.modules.name[i], &b->u.modules.name[i]) ||
			    !str_eq(&a->u.modules.comment[i], &b->u.modules.comment[i]))
				return false;
		return true;
	case RD_MSG_OPEN:
		return open_eq(&a->u.open, &b->u.open);
	case RD_MSG_OPEN_OK:
		return a->u.open_ok.flags == b->u.open_ok.flags &&
		       a->u.open_ok.chunk_size == b->u.open_ok.chunk_size &&
		       str_eq(&a->u.open_ok.digest, &b->u.open_ok.digest) &&
		       a->u.open_ok.window == b->u.open_ok.window;
	case RD_MSG_ERROR:
		return a->u.error.code == b->u.error.code &&
		       str_eq(&a->u.error.text, &b->u.error.text);
	case RD_MSG_FILE:
		return file_eq(&a->u.file, &b->u.file);
	case RD_MSG_END:
		return a->u.end.nfiles == b->u.end.nfiles;
	case RD_MSG_GET:
		return get_eq(&a->u.get, &b->u.get);
	case RD_MSG_RAILS:
		return a->u.rails.n == b->u.rails.n &&
		       !memcmp(a->u.rails.a, b->u.rails.a, a->u.rails.n * sizeof(a->u.rails.a[0]));
	case RD_MSG_LANES:
		return !memcmp(a->u.lanes.nonce, b->u.lanes.nonce, RD_LANE_NONCE_LEN);
	case RD_MSG_DATA:
		return data_eq(&a->u.data, &b->u.data);
	case RD_MSG_CHUNK_ERR:
		return a->u.chunk_err.id == b->u.chunk_err.id &&
		       a->u.chunk_err.chunk == b->u.chunk_err.chunk &&
		       a->u.chunk_err.code == b->u.chunk_err.code &&
		       str_eq(&a->u.chunk_err.text, &b->u.chunk_err.text);
	case RD_MSG_DONE:
		return a->u.done.id == b->u.done.id && a->u.done.status == b->u.done.status &&
		       a->u.done.bytes == b->u.done.bytes &&
		       str_eq(&a->u.done.text, &b->u.done.text);
	case RD_MSG_NOTE:
		return a->u.note.code == b->u.note.code &&
		       str_eq(&a->u.note.path, &b->u.note.path) &&
		       str_eq(&a->u.note.text, &b->u.note.text);
	case RD_MSG_META:
		return meta_eq(&a->u.meta, &b->u.meta);
	case RD_MSG_FILES:
		return a->u.files.n == b->u.files.n && a->u.files.rawlen == b->u.files.rawlen &&
		       !memcmp(a->u.files.raw, b->u.files.raw, a->u.files.rawlen);
	case RD_MSG_FILEZ:
		return a->u.files.n == b->u.files.n && a->u.files.id == b->u.files.id &&
		       a->u.files.rawlen == b->u.files.rawlen &&
		       !memcmp(a->u.files.raw, b->u.files.raw, a->u.files.rawlen);
	case RD_MSG_DONES:
		return a->u.dones.n == b->u.dones.n &&
		       !memcmp(a->u.dones.id, b->u.dones.id, a->u.dones.n * sizeof(uint32_t)) &&
		       !memcmp(a->u.dones.bytes, b->u.dones.bytes, a->u.dones.n * sizeof(uint64_t));
	case RD_MSG_RULES:
		return a->u.rules.kind == b->u.rules.kind && a->u.rules.n == b->u.rules.n &&
		       a->u.rules.rawlen == b->u.rules.rawlen &&
		       !memcmp(a->u.rules.raw, b->u.rules.raw, a->u.rules.rawlen);
	case RD_MSG_DELETED:
		if (a->u.deleted.n != b->u.deleted.n || a->u.deleted.n > RD_DEL_BATCH)
			return false;
		for (unsigned i = 0; i < a->u.deleted.n; i++)
			if (a->u.deleted.flags[i] != b->u.deleted.flags[i] ||
			    !str_eq(&a->u.deleted.path[i], &b->u.deleted.path[i]) ||
			    !str_eq(&a->u.deleted.text[i], &b->u.deleted.text[i]))
				return false;
		return true;
	case RD_MSG_FIN:
		return a->u.fin.files_ok == b->u.fin.files_ok &&
		       a->u.fin.files_failed == b->u.fin.files_failed &&
		       a->u.fin.bytes == b->u.fin.bytes;
	default:
		return false;
	}
}
