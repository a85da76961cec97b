// SPDX-License-Identifier: MIT
/*
 * Control message codec (sections 2 and 3 of rd_proto.h).
 *
 * Decoding is two passes over one message: the structural pass reads the
 * payload with a bounds-checked cursor (every string length is checked
 * against its limit and against the bytes left before it is used, every
 * count before its loop), then msg_check() validates the values. The
 * encoder runs the same msg_check() first, so it can never produce a
 * message the decoder refuses.
 */
#include "lib/proto/rd_proto.h"

#include <string.h>
#include <sys/stat.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto_buf.h"
#include "lib/proto/rd_proto_filez.h"
#include "lib/proto/rd_proto_want.h"

#define NSEC_PER_SEC 1000000000u

static const char *str_check(const struct rd_str *s, size_t max, const char *too_long)
{
	if (s->len > max)
		return too_long;
	if (s->len && !s->ptr)
		return "string without bytes";
	return NULL;
}

/* Digest names are EVP names or "none": short, printable, no spaces. */
static const char *digest_name_check(const struct rd_str *s)
{
	const char *why = str_check(s, RD_DIGEST_NAME_MAX, "digest name too long");
	uint16_t i;

	if (why)
		return why;
	if (s->len == 0)
		return "empty digest name";
	for (i = 0; i < s->len; i++) {
		if ((unsigned char)s->ptr[i] < 0x21 || (unsigned char)s->ptr[i] > 0x7e)
			return "bad byte in digest name";
	}
	return NULL;
}

static const char *chunk_size_check(uint32_t chunk_size)
{
	if (chunk_size < RD_CHUNK_MIN || chunk_size > RD_CHUNK_MAX)
		return "chunk size out of range";
	return NULL;
}

static const char *wire_path_check(const struct rd_str *s)
{
	const char *why;

	if (s->len && !s->ptr)
		return "string without bytes";
	if (rd_path_check(s->ptr, s->len, &why))
		return why;
	return NULL;
}

/* OPEN's and OPEN_OK's window: there with RD_OF_WINDOW, in bounds. */
static const char *window_check(uint32_t flags, uint16_t window)
{
	if (!(flags & RD_OF_WINDOW))
		return window ? "window without RD_OF_WINDOW" : NULL;
	if (window < RD_WINDOW_FILES || window > RD_WINDOW_MAX)
		return "bad window";
	return NULL;
}

/* RELATIVE's skip: within the path after "module/", just past a '/'. */
static int skip_ok(const struct rd_str *p, uint16_t skip)
{
	const char *slash = p->ptr ? memchr(p->ptr, '/', p->len) : NULL;
	size_t rest;

	if (!slash)
		return 0;
	slash++;
	rest = p->len - (size_t)(slash - p->ptr);
	return skip < rest && slash[skip - 1] == '/' && slash[skip] != '/';
}

/* OPEN's SELECT block: the values of RD_PROTO_SELECT's spec, per mode. */
static const char *select_check(const struct rd_msg_open *o)
{
	const struct rd_select *x = &o->sel;
	uint16_t i;

	if (x->compare > RD_CMP_ALL)
		return "bad SELECT compare";
	if (x->rules & ~RD_SEL_KNOWN)
		return "unknown SELECT rules";
	if (x->modify_window < RD_WINDOW_NS)
		return "bad SELECT modify window";
	if (x->nrules > RD_RULES_MAX)
		return "too many filter rules";
	if (x->nnames > RD_NAMES_MAX)
		return "too many --files-from names";
	if (o->mode == RD_MODE_PULL && (x->rules & (RD_SEL_DEST_DIR | RD_SEL_MKPATH)))
		return "destination rules on a PULL";
	if (o->mode == RD_MODE_PUSH && x->nnames)
		return "--files-from names on a PUSH";
	for (i = 0; i < o->npaths; i++) {
		if (x->pflags[i] & ~RD_PF_KNOWN)
			return "unknown SELECT path flags";
		if (o->mode == RD_MODE_PUSH && (x->pflags[i] || x->skip[i]))
			return "SELECT path flags on a PUSH";
		if (x->skip[i] && !(x->rules & RD_SEL_RELATIVE))
			return "SELECT skip without RELATIVE";
		if (x->skip[i] && !skip_ok(&o->paths[i], x->skip[i]))
			return "bad SELECT skip";
	}
	return NULL;
}

/* A string without NUL (and, no_slash, without '/'). */
static const char *bytes_check(const struct rd_str *s, int no_slash, const char *what)
{
	if (s->len && !s->ptr)
		return "string without bytes";
	if (s->len && memchr(s->ptr, '\0', s->len))
		return what;
	if (no_slash && s->len && memchr(s->ptr, '/', s->len))
		return what;
	return NULL;
}

/* OPEN's DESTS block (RD_OF_DESTS, version 13): the values of its spec. */
static const char *dests_check(const struct rd_msg_open *o)
{
	const struct rd_dests *d = &o->dests;
	const char *why;
	unsigned i;

	if (!(o->flags & RD_OF_DESTS))
		return d->flags || d->kind || d->ndests || d->backup_dir.len || d->suffix.len
			   ? "DESTS without RD_OF_DESTS"
			   : NULL;
	if (!(o->flags & RD_OF_SELECT) || o->mode != RD_MODE_PUSH)
		return "DESTS only on a PUSH with SELECT";
	if (d->flags & ~RD_DF_KNOWN)
		return "unknown DESTS flags";
	if (d->backup_dir.len > RD_PATH_MAX || d->suffix.len > RD_SUFFIX_MAX)
		return "DESTS string too long";
	if (!(d->flags & RD_DF_BACKUP) && d->backup_dir.len)
		return "a backup dir without BACKUP";
	if (!(d->flags & RD_DF_SUFFIX) && d->suffix.len)
		return "a suffix without SUFFIX";
	if ((d->flags & RD_DF_SUFFIX) && !d->suffix.len && !d->backup_dir.len)
		return "an empty suffix without a backup dir";
	why = bytes_check(&d->backup_dir, 0, "bad backup dir");
	if (!why)
		why = bytes_check(&d->suffix, 1, "bad backup suffix");
	if (why)
		return why;
	if (d->kind > RD_DK_COPY || d->ndests > RD_DESTS_MAX || !d->kind != !d->ndests)
		return "bad DESTS kind or count";
	for (i = 0; i < d->ndests; i++) {
		if (!d->dirs[i].len || d->dirs[i].len > RD_PATH_MAX)
			return "bad DESTS dir length";
		why = bytes_check(&d->dirs[i], 0, "bad DESTS dir");
		if (why)
			return why;
	}
	return NULL;
}

/* OPEN's MIRROR block (version 13). */
static const char *mirror_check(const struct rd_msg_open *o)
{
	const struct rd_mirror *x = &o->mir;

	if (!(o->flags & RD_OF_SELECT))
		return "MIRROR without SELECT";
	if (x->flags & ~RD_MF_KNOWN)
		return "unknown MIRROR flags";
	if ((x->flags & RD_MF_DEL_BEFORE) && (x->flags & RD_MF_DEL_AFTER))
		return "MIRROR: delete before and after";
	if ((x->flags & (RD_MF_DEL_BEFORE | RD_MF_DEL_AFTER)) && !(x->flags & RD_MF_DELETE))
		return "MIRROR: a deletion order without DELETE";
	if (x->max_delete < RD_MAX_DELETE_NONE)
		return "bad MIRROR max_delete";
	if ((x->flags & RD_MF_REMOVE_SRC) &&
	    (o->mode != RD_MODE_PULL || (x->flags & RD_MF_LATE_ROOM)))
		return "MIRROR: remove sources but on a pull, or with late room";
	return NULL;
}

static const char *deleted_check(const struct rd_msg_deleted *d)
{
	const char *why;
	uint16_t i;

	if (d->n == 0 || d->n > RD_DEL_BATCH)
		return "bad DELETED count";
	for (i = 0; i < d->n; i++) {
		if (d->flags[i] & ~RD_DLF_KNOWN)
			return "unknown DELETED flags";
		if ((d->flags[i] & RD_DLF_UNMADE) && !(d->flags[i] & RD_DLF_FAILED))
			return "DELETED UNMADE without FAILED";
		why = str_check(&d->path[i], RD_PATH_MAX, "deleted path too long");
		if (!why)
			why = str_check(&d->text[i], RD_MSG_TEXT_MAX, "message text too long");
		if (why)
			return why;
		if (d->text[i].len && !(d->flags[i] & (RD_DLF_FAILED | RD_DLF_OFF | RD_DLF_SKIPPED)))
			return "DELETED text without FAILED, SKIPPED or OFF";
	}
	return NULL;
}

static const char *open_check(const struct rd_msg_open *o)
{
	const char *why;
	uint16_t i;

	if (o->mode != RD_MODE_PUSH && o->mode != RD_MODE_PULL)
		return "bad OPEN mode";
	why = chunk_size_check(o->chunk_size);
	if (!why && o->digest.len) /* empty: the server chooses */
		why = digest_name_check(&o->digest);
	if (why)
		return why;
	if (o->npaths == 0 || o->npaths > RD_OPEN_PATHS_MAX)
		return "bad OPEN path count";
	for (i = 0; i < o->npaths; i++) {
		why = wire_path_check(&o->paths[i]);
		if (why)
			return why;
	}
	if (o->flags & RD_OF_PARTIAL_DIR) {
		if (o->partial_dir.len && !o->partial_dir.ptr)
			return "string without bytes";
		if (rd_name_check(o->partial_dir.ptr, o->partial_dir.len, &why))
			return why;
	} else if (o->partial_dir.len) {
		return "partial dir without RD_OF_PARTIAL_DIR";
	}
	why = window_check(o->flags, o->window);
	if (!why)
		why = dests_check(o);
	if (!why && (o->flags & RD_OF_SELECT))
		why = select_check(o);
	if (why)
		return why;
	if (!(o->flags & RD_OF_MIRROR))
		return o->mir.flags || o->mir.max_delete ? "MIRROR without RD_OF_MIRROR" : NULL;
	return mirror_check(o);
}

static const char *special_check(const struct rd_msg_file *f)
{
	switch (f->mode & S_IFMT) {
	case S_IFCHR:
	case S_IFBLK:
		return NULL;
	case S_IFIFO:
	case S_IFSOCK:
		return f->size ? "device number on a fifo or socket" : NULL;
	default:
		return "special entry of no special type";
	}
}

static const char *file_check(const struct rd_msg_file *f)
{
	const char *why;

	if (f->type < RD_FT_REG || f->type > RD_FT_HLINK)
		return "bad file type";
	if (f->flags & ~RD_FF_KNOWN)
		return "unknown entry flags";
	if ((f->flags & RD_FF_MORE) && f->type != RD_FT_REG && f->type != RD_FT_DIR)
		return "metadata announced for an entry that takes none";
	/* on a DIR the bit is RD_FF_IMPLIED (the receiver checks it was agreed) */
	if ((f->flags & RD_FF_LINKED) && f->type != RD_FT_REG && f->type != RD_FT_DIR)
		return "link group started by an entry that is not a regular file";
	if ((f->flags & RD_FF_LINK_LAST) && f->type != RD_FT_HLINK)
		return "link group ended by an entry that is not a hard link";
	if ((f->flags & (RD_FF_RANGE | RD_FF_COMMIT)) &&
	    (f->type != RD_FT_REG || (f->flags & RD_FF_RANGE && f->flags & RD_FF_COMMIT) ||
	     !(f->flags & RD_FF_MORE)))
		return "range or commit flag on an entry that cannot take it";
	if ((f->flags & RD_FF_CONTENTS) && (f->flags & RD_FF_ROOT) && f->type != RD_FT_DIR)
		return "contents of an entry that is not a directory";
	if (f->mtime_nsec >= NSEC_PER_SEC)
		return "mtime nanoseconds out of range";
	why = wire_path_check(&f->path);
	if (why)
		return why;
	why = str_check(&f->target, RD_PATH_MAX, "symlink target too long");
	if (why)
		return why;
	if (f->type == RD_FT_SPECIAL && (why = special_check(f)))
		return why;
	if (f->type == RD_FT_HLINK)
		return wire_path_check(&f->target);
	if (f->type != RD_FT_SYMLINK)
		return f->target.len ? "link target on a non-symlink" : NULL;
	if (f->target.len == 0)
		return "empty symlink target";
	if (memchr(f->target.ptr, '\0', f->target.len))
		return "NUL byte in symlink target";
	return NULL;
}

const char *rd_proto__file_check(const struct rd_msg_file *f)
{
	return file_check(f);
}

struct rd_acl_ent rd_meta_acl(const struct rd_msg_meta *m, unsigned i)
{
	struct rd_acl_ent a = {0, 0, 0};
	const uint8_t *p;

	if (m->acl)
		return m->acl[i];
	if (!m->raw)
		return a;
	p = m->raw + (size_t)i * 6;
	a.tag = p[0];
	a.perm = p[1];
	a.id = (uint32_t)p[2] << 24 | (uint32_t)p[3] << 16 | (uint32_t)p[4] << 8 | p[5];
	return a;
}

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

struct rd_extent rd_meta_extent(const struct rd_msg_meta *m, unsigned i)
{
	struct rd_extent x = {0, 0};

	if (m->ext)
		return m->ext[i];
	if (!m->raw)
		return x;
	x.off = be64(m->raw + (size_t)i * 16);
	x.len = be64(m->raw + (size_t)i * 16 + 8);
	return x;
}

static const char *meta_check(const struct rd_msg_meta *m)
{
	struct rd_acl_ent a;
	struct rd_extent x;
	uint64_t end = 0;
	unsigned i;
	const char *why;

	if (m->flags & ~RD_MF_LAST)
		return "unknown META flags";
	switch (m->kind) {
	case RD_META_XATTR:
		why = str_check(&m->name, RD_XATTR_NAME_MAX, "xattr name too long");
		if (why)
			return why;
		if (!m->name.len || memchr(m->name.ptr, '\0', m->name.len))
			return "empty xattr name or NUL in it";
		if (m->vlen > RD_XATTR_VAL_MAX)
			return "xattr value too long";
		return m->vlen && !m->value ? "xattr without value bytes" : NULL;
	case RD_META_ACL:
		if (m->acl_type != RD_ACL_ACCESS && m->acl_type != RD_ACL_DEFAULT)
			return "bad ACL type";
		if (m->n == 0 || m->n > RD_ACL_MAX)
			return "bad ACL entry count";
		if (!m->acl && !m->raw)
			return "ACL without entries";
		for (i = 0; i < m->n; i++) {
			a = rd_meta_acl(m, i);
			if (a.tag < RD_ACL_USER_OBJ || a.tag > RD_ACL_OTHER || a.perm > 7)
				return "bad ACL entry";
		}
		return NULL;
	case RD_META_SPARSE:
		if (m->n > RD_SPARSE_MAX)
			return "too many sparse extents";
		if (m->n && !m->ext && !m->raw)
			return "sparse map without extents";
		for (i = 0; i < m->n; i++) {
			x = rd_meta_extent(m, i);
			if (!x.len || x.off < end || x.off + x.len < x.off)
				return "sparse extents empty, out of order or overlapping";
			end = x.off + x.len;
		}
		return NULL;
	case RD_META_RANGE:
		return m->off + m->len < m->off ? "range wraps" : NULL;
	default:
		return "unknown META kind";
	}
}

static const char *rails_check(const struct rd_msg_rails *m)
{
	unsigned i;

	if (m->n > RD_RAILS_MAX - 1)
		return "too many rails";
	for (i = 0; i < m->n; i++)
		if (m->a[i].family != 4 && m->a[i].family != 6)
			return "bad rail address family";
	return NULL;
}

static const char *kind_check(uint8_t kind, uint64_t chunk)
{
	if (kind != RD_GET_DATA && kind != RD_GET_SUM && kind != RD_GET_PACK)
		return "bad chunk request kind";
	if (kind == RD_GET_PACK && (chunk < 1 || chunk > RD_PACK_FILES_MAX))
		return "bad pack file count";
	return NULL;
}

static void get_file(struct rd_rcur *r, struct rd_msg_file *f);

/* Every FILE payload of a FILES, as FILE would be checked; MORE only on the last. */
static const char *files_check(const struct rd_msg_files *m)
{
	struct rd_msg_file f;
	struct rd_rcur r;
	const char *why;
	unsigned i;

	if (m->n == 0 || m->n > RD_BATCH_MAX)
		return "bad batch entry count";
	if (!m->raw && m->rawlen)
		return "batch without entries";
	rd_rcur_init(&r, m->raw, m->rawlen);
	for (i = 0; i < m->n; i++) {
		get_file(&r, &f);
		if (r.why)
			return r.why;
		why = file_check(&f);
		if (why)
			return why;
		if ((f.flags & RD_FF_MORE) && i + 1 < m->n)
			return "metadata announced before the end of a batch";
	}
	return rd_rcur_left(&r) ? "trailing bytes after payload" : NULL;
}

int rd_files_next(const struct rd_msg_files *m, size_t *off, struct rd_msg_file *f)
{
	struct rd_rcur r;

	if (*off > m->rawlen)
		return -RD_EPROTO;
	rd_rcur_init(&r, m->raw + *off, m->rawlen - *off);
	get_file(&r, f);
	if (r.why || file_check(f))
		return -RD_EPROTO;
	*off += r.off;
	return 0;
}

static const char *dones_check(const struct rd_msg_dones *m)
{
	unsigned i;

	/* more than RD_BATCH_MAX only with RD_OF_WIDE: the engine knows */
	if (m->n == 0 || m->n > RD_BATCH_WIDE)
		return "bad batch entry count";
	for (i = 0; m->has_items && i < m->n; i++)
		if (m->items[i] & ~RD_IT_KNOWN)
			return "unknown item flags";
	return NULL;
}

/* A module name or comment of MODULES: printable, bounded; names without '/'. */
static const char *list_str_check(const struct rd_str *s, size_t min, size_t max, int name)
{
	size_t i;

	if (s->len < min || s->len > max || (s->len && !s->ptr))
		return name ? "bad module name length" : "module comment too long";
	for (i = 0; i < s->len; i++) {
		unsigned char ch = (unsigned char)s->ptr[i];

		if (ch < 0x20 || ch == 0x7f || (name && ch == '/'))
			return name ? "bad byte in a module name" : "bad byte in a module comment";
	}
	return NULL;
}

static const char *modules_check(const struct rd_msg_modules *m)
{
	const char *why = NULL;
	unsigned i;

	if (m->flags & ~RD_LSF_LAST)
		return "unknown MODULES flags";
	if (m->n > RD_LIST_BATCH)
		return "too many modules in one message";
	for (i = 0; i < m->n && !why; i++) {
		why = list_str_check(&m->name[i], 1, RD_LIST_NAME_MAX, 1);
		if (!why)
			why = list_str_check(&m->comment[i], 0, RD_LIST_COMMENT_MAX, 0);
	}
	return why;
}

const char *rd_rules_check(uint8_t kind, const char *s, size_t n)
{
	const char *why;
	size_t i;

	if (kind == RD_RULES_NAMES)
		return rd_path_check(s, n, &why) ? why : NULL;
	if (kind != RD_RULES_FILTER)
		return "unknown RULES kind";
	if (n == 0 || n > RD_RULE_MAX)
		return "filter rule empty or too long";
	for (i = 0; i < n; i++)
		if (s[i] == '\0' || s[i] == '\n' || s[i] == '\r')
			return "NUL or line break in a filter rule";
	return NULL;
}

/* Every string of a RULES, checked as its kind says. */
static const char *rules_check(const struct rd_msg_rules *m)
{
	struct rd_rcur r;
	struct rd_str x;
	const char *why;
	unsigned i;

	if (m->kind != RD_RULES_FILTER && m->kind != RD_RULES_NAMES)
		return "unknown RULES kind";
	if (m->n == 0)
		return "RULES without strings";
	if (!m->raw && m->rawlen)
		return "RULES without bytes";
	rd_rcur_init(&r, m->raw, m->rawlen);
	for (i = 0; i < m->n; i++) {
		rd_get_str(&r, &x, RD_RULE_MAX, "filter rule too long");
		if (r.why)
			return r.why;
		why = rd_rules_check(m->kind, x.ptr, x.len);
		if (why)
			return why;
	}
	return rd_rcur_left(&r) ? "trailing bytes after payload" : NULL;
}

int rd_rules_next(const struct rd_msg_rules *m, size_t *off, struct rd_str *s)
{
	struct rd_rcur r;

	if (*off > m->rawlen)
		return -RD_EPROTO;
	rd_rcur_init(&r, m->raw + *off, m->rawlen - *off);
	rd_get_str(&r, s, RD_RULE_MAX, "filter rule too long");
	if (r.why || rd_rules_check(m->kind, s->ptr, s->len))
		return -RD_EPROTO;
	*off += r.off;
	return 0;
}

int rd_rules_put(uint8_t *buf, size_t cap, size_t *len, uint8_t kind, const char *s, size_t n)
{
	struct rd_wcur w;
	struct rd_str x = {s, (uint16_t)n};

	if (*len > cap || n > RD_RULE_MAX || rd_rules_check(kind, s, n))
		return -RD_EUSAGE;
	rd_wcur_init(&w, buf + *len, cap - *len);
	rd_put_str(&w, &x);
	if (w.full)
		return -RD_EUSAGE;
	*len += w.off;
	return 0;
}

static const char *text_check(const struct rd_str *s)
{
	return str_check(s, RD_MSG_TEXT_MAX, "message text too long");
}

/* Value checks shared by encode and decode; NULL if msg is valid. */
static const char *msg_check(const struct rd_msg *m)
{
	const char *why;

	switch (m->hdr.type) {
	case RD_MSG_CREDIT:
	case RD_MSG_END:
	case RD_MSG_FIN:
	case RD_MSG_LIST:
		return NULL;
	case RD_MSG_MODULES:
		return modules_check(&m->u.modules);
	case RD_MSG_OPEN:
		return open_check(&m->u.open);
	case RD_MSG_OPEN_OK:
		why = chunk_size_check(m->u.open_ok.chunk_size);
		if (!why)
			why = digest_name_check(&m->u.open_ok.digest);
		return why ? why : window_check(m->u.open_ok.flags, m->u.open_ok.window);
	case RD_MSG_ERROR:
		return text_check(&m->u.error.text);
	case RD_MSG_FILE:
		return file_check(&m->u.file);
	case RD_MSG_GET:
		if (m->u.get.nx > RD_RAILS_MAX - 1)
			return "bad rail key count";
		return kind_check(m->u.get.kind, m->u.get.chunk);
	case RD_MSG_RAILS:
		return rails_check(&m->u.rails);
	case RD_MSG_LANES:
		return NULL;
	case RD_MSG_DATA:
		if (m->u.data.dlen > RD_DIGEST_MAX)
			return "digest too long";
		return kind_check(m->u.data.kind, m->u.data.chunk);
	case RD_MSG_CHUNK_ERR:
		return text_check(&m->u.chunk_err.text);
	case RD_MSG_DONE:
		if (m->u.done.has_items && (m->u.done.items & ~RD_IT_KNOWN))
			return "unknown item flags";
		return text_check(&m->u.done.text);
	case RD_MSG_NOTE:
		why = str_check(&m->u.note.path, RD_PATH_MAX, "note path too long");
		return why ? why : text_check(&m->u.note.text);
	case RD_MSG_META:
		return meta_check(&m->u.meta);
	case RD_MSG_FILES:
		return files_check(&m->u.files);
	case RD_MSG_FILEZ:
		return rd_proto__filez_check(&m->u.files);
	case RD_MSG_DONES:
		return dones_check(&m->u.dones);
	case RD_MSG_WANT:
		return rd_proto__want_check(&m->u.want);
	case RD_MSG_RULES:
		return rules_check(&m->u.rules);
	case RD_MSG_DELETED:
		return deleted_check(&m->u.deleted);
	default:
		return "unknown message type";
	}
}

/* OPEN's DESTS block (after MIRROR when that is there, else after SELECT) */
static void put_dests(struct rd_wcur *w, const struct rd_dests *d)
{
	unsigned i;

	rd_put_u8(w, d->flags);
	rd_put_str(w, &d->backup_dir);
	rd_put_str(w, &d->suffix);
	rd_put_u8(w, d->kind);
	rd_put_u8(w, d->ndests);
	for (i = 0; i < d->ndests && i < RD_DESTS_MAX; i++)
		rd_put_str(w, &d->dirs[i]);
}

static void put_open(struct rd_wcur *w, const struct rd_msg_open *o)
{
	uint16_t i;

	rd_put_u8(w, o->mode);
	rd_put_u32(w, o->flags);
	rd_put_u32(w, o->chunk_size);
	rd_put_str(w, &o->digest);
	rd_put_u16(w, o->npaths);
	for (i = 0; i < o->npaths; i++)
		rd_put_str(w, &o->paths[i]);
	if (o->flags & RD_OF_PARTIAL_DIR)
		rd_put_str(w, &o->partial_dir);
	if (o->flags & RD_OF_WINDOW)
		rd_put_u16(w, o->window);
	if (o->flags & RD_OF_SELECT) {
		rd_put_u8(w, o->sel.compare);
		rd_put_u16(w, o->sel.rules);
		rd_put_u32(w, (uint32_t)o->sel.modify_window);
		rd_put_u64(w, o->sel.min_size);
		rd_put_u64(w, o->sel.max_size);
		for (i = 0; i < o->npaths && i < RD_OPEN_PATHS_MAX; i++) {
			rd_put_u8(w, o->sel.pflags[i]);
			rd_put_u16(w, o->sel.skip[i]);
		}
		rd_put_u16(w, o->sel.nrules);
		rd_put_u32(w, o->sel.nnames);
	}
	if (o->flags & RD_OF_MIRROR) {
		rd_put_u16(w, o->mir.flags);
		rd_put_u64(w, (uint64_t)o->mir.max_delete);
	}
	if (o->flags & RD_OF_DESTS)
		put_dests(w, &o->dests);
}

static void put_file(struct rd_wcur *w, const struct rd_msg_file *f)
{
	rd_put_u32(w, f->id);
	rd_put_u8(w, f->type);
	rd_put_u8(w, f->flags);
	rd_put_u32(w, f->mode);
	rd_put_u32(w, f->uid);
	rd_put_u32(w, f->gid);
	rd_put_u64(w, f->size);
	rd_put_u64(w, (uint64_t)f->mtime_sec);
	rd_put_u32(w, f->mtime_nsec);
	rd_put_str(w, &f->path);
	rd_put_str(w, &f->target);
}

static void put_meta(struct rd_wcur *w, const struct rd_msg_meta *m)
{
	struct rd_acl_ent a;
	struct rd_extent x;
	unsigned i;

	rd_put_u32(w, m->id);
	rd_put_u8(w, m->kind);
	rd_put_u8(w, m->flags);
	switch (m->kind) {
	case RD_META_XATTR:
		rd_put_str(w, &m->name);
		rd_put_u32(w, m->vlen);
		rd_put_bytes(w, m->value, m->vlen);
		break;
	case RD_META_ACL:
		rd_put_u8(w, m->acl_type);
		rd_put_u16(w, m->n);
		for (i = 0; i < m->n; i++) {
			a = rd_meta_acl(m, i);
			rd_put_u8(w, a.tag);
			rd_put_u8(w, a.perm);
			rd_put_u32(w, a.id);
		}
		break;
	case RD_META_RANGE:
		rd_put_u64(w, m->job);
		rd_put_u64(w, m->off);
		rd_put_u64(w, m->len);
		break;
	default: /* SPARSE */
		rd_put_u16(w, m->n);
		for (i = 0; i < m->n; i++) {
			x = rd_meta_extent(m, i);
			rd_put_u64(w, x.off);
			rd_put_u64(w, x.len);
		}
		break;
	}
}

static void put_get(struct rd_wcur *w, const struct rd_msg_get *g)
{
	rd_put_u32(w, g->id);
	rd_put_u8(w, (uint8_t)(g->kind | (g->nx ? RD_GET_RAILS : 0)));
	rd_put_u32(w, g->slot);
	rd_put_u64(w, g->chunk);
	rd_put_u64(w, g->addr);
	rd_put_u32(w, g->rkey);
	rd_put_u32(w, g->len);
	rd_put_u64(w, g->seq);
	if (g->nx) {
		unsigned i;

		rd_put_u8(w, g->nx);
		for (i = 0; i < g->nx && i < RD_RAILS_MAX - 1; i++)
			rd_put_u32(w, g->xrkey[i]);
	}
}

static void put_rails(struct rd_wcur *w, const struct rd_msg_rails *m)
{
	unsigned i;

	rd_put_u8(w, m->n);
	for (i = 0; i < m->n && i < RD_RAILS_MAX - 1; i++) {
		rd_put_u8(w, m->a[i].family);
		rd_put_bytes(w, m->a[i].addr, 16);
	}
}

static void put_data(struct rd_wcur *w, const struct rd_msg_data *d)
{
	rd_put_u32(w, d->id);
	rd_put_u8(w, d->kind);
	rd_put_u32(w, d->slot);
	rd_put_u64(w, d->chunk);
	rd_put_u32(w, d->len);
	rd_put_u64(w, d->seq);
	rd_put_u8(w, d->dlen);
	rd_put_bytes(w, d->digest, d->dlen);
}

static void put_payload(struct rd_wcur *w, const struct rd_msg *m)
{
	unsigned i;

	switch (m->hdr.type) {
	case RD_MSG_OPEN:
		put_open(w, &m->u.open);
		break;
	case RD_MSG_OPEN_OK:
		rd_put_u32(w, m->u.open_ok.flags);
		rd_put_u32(w, m->u.open_ok.chunk_size);
		rd_put_str(w, &m->u.open_ok.digest);
		if (m->u.open_ok.flags & RD_OF_WINDOW)
			rd_put_u16(w, m->u.open_ok.window);
		break;
	case RD_MSG_ERROR:
		rd_put_u16(w, m->u.error.code);
		rd_put_str(w, &m->u.error.text);
		break;
	case RD_MSG_FILE:
		put_file(w, &m->u.file);
		break;
	case RD_MSG_END:
		rd_put_u32(w, m->u.end.nfiles);
		break;
	case RD_MSG_GET:
		put_get(w, &m->u.get);
		break;
	case RD_MSG_RAILS:
		put_rails(w, &m->u.rails);
		break;
	case RD_MSG_LANES:
		rd_put_bytes(w, m->u.lanes.nonce, RD_LANE_NONCE_LEN);
		break;
	case RD_MSG_DATA:
		put_data(w, &m->u.data);
		break;
	case RD_MSG_CHUNK_ERR:
		rd_put_u32(w, m->u.chunk_err.id);
		rd_put_u64(w, m->u.chunk_err.chunk);
		rd_put_u16(w, m->u.chunk_err.code);
		rd_put_str(w, &m->u.chunk_err.text);
		break;
	case RD_MSG_DONE:
		rd_put_u32(w, m->u.done.id);
		rd_put_u16(w, m->u.done.status);
		rd_put_u64(w, m->u.done.bytes);
		rd_put_str(w, &m->u.done.text);
		if (m->u.done.has_items)
			rd_put_u16(w, m->u.done.items);
		break;
	case RD_MSG_NOTE:
		rd_put_u16(w, m->u.note.code);
		rd_put_str(w, &m->u.note.path);
		rd_put_str(w, &m->u.note.text);
		break;
	case RD_MSG_META:
		put_meta(w, &m->u.meta);
		break;
	case RD_MSG_FILES:
		rd_put_u16(w, m->u.files.n);
		rd_put_bytes(w, m->u.files.raw, m->u.files.rawlen);
		break;
	case RD_MSG_FILEZ:
		rd_put_u16(w, m->u.files.n);
		rd_put_u32(w, m->u.files.id);
		rd_put_bytes(w, m->u.files.raw, m->u.files.rawlen);
		break;
	case RD_MSG_WANT:
		rd_proto__want_put(w, &m->u.want);
		break;
	case RD_MSG_DONES:
		rd_put_u16(w, m->u.dones.n);
		for (i = 0; i < m->u.dones.n && i < RD_BATCH_WIDE; i++) {
			rd_put_u32(w, m->u.dones.id[i]);
			rd_put_u64(w, m->u.dones.bytes[i]);
			if (m->u.dones.has_items)
				rd_put_u16(w, m->u.dones.items[i]);
		}
		break;
	case RD_MSG_MODULES:
		rd_put_u8(w, m->u.modules.flags);
		rd_put_u16(w, m->u.modules.n);
		for (i = 0; i < m->u.modules.n && i < RD_LIST_BATCH; i++) {
			rd_put_str(w, &m->u.modules.name[i]);
			rd_put_str(w, &m->u.modules.comment[i]);
		}
		break;
	case RD_MSG_RULES:
		rd_put_u8(w, m->u.rules.kind);
		rd_put_u16(w, m->u.rules.n);
		rd_put_bytes(w, m->u.rules.raw, m->u.rules.rawlen);
		break;
	case RD_MSG_DELETED:
		rd_put_u16(w, m->u.deleted.n);
		for (i = 0; i < m->u.deleted.n && i < RD_DEL_BATCH; i++) {
			rd_put_u8(w, m->u.deleted.flags[i]);
			rd_put_str(w, &m->u.deleted.path[i]);
			rd_put_str(w, &m->u.deleted.text[i]);
		}
		break;
	case RD_MSG_FIN:
		rd_put_u32(w, m->u.fin.files_ok);
		rd_put_u32(w, m->u.fin.files_failed);
		rd_put_u64(w, m->u.fin.bytes);
		break;
	default: /* CREDIT: empty */
		break;
	}
}

int rd_msg_encode(uint8_t *buf, size_t cap, const struct rd_msg *msg)
{
	struct rd_wcur w;
	size_t plen;
	int ret = -RD_EUSAGE;

	if (!buf || !msg || msg_check(msg))
		goto out;
	rd_wcur_init(&w, buf, cap < RD_MSG_MAX ? cap : RD_MSG_MAX);
	rd_put_u8(&w, msg->hdr.type);
	rd_put_u8(&w, 0);
	rd_put_u16(&w, msg->hdr.credits);
	rd_put_u32(&w, 0); /* length, patched below */
	put_payload(&w, msg);
	if (w.full)
		goto out;
	plen = w.off - RD_HDR_LEN;
	buf[4] = (uint8_t)(plen >> 24);
	buf[5] = (uint8_t)(plen >> 16);
	buf[6] = (uint8_t)(plen >> 8);
	buf[7] = (uint8_t)plen;
	ret = (int)w.off;
out:
	return ret;
}

static void get_dests(struct rd_rcur *r, struct rd_dests *d)
{
	unsigned i;

	d->flags = rd_get_u8(r);
	rd_get_str(r, &d->backup_dir, RD_PATH_MAX, "backup dir too long");
	rd_get_str(r, &d->suffix, RD_SUFFIX_MAX, "backup suffix too long");
	d->kind = rd_get_u8(r);
	d->ndests = rd_get_u8(r);
	if (r->why)
		return;
	if (d->ndests > RD_DESTS_MAX) {
		rd_rcur_fail(r, "bad DESTS kind or count");
		return;
	}
	for (i = 0; i < d->ndests; i++)
		rd_get_str(r, &d->dirs[i], RD_PATH_MAX, "DESTS dir too long");
}

static void get_open(struct rd_rcur *r, struct rd_msg_open *o)
{
	uint16_t i;

	o->mode = rd_get_u8(r);
	o->flags = rd_get_u32(r);
	o->chunk_size = rd_get_u32(r);
	rd_get_str(r, &o->digest, RD_DIGEST_NAME_MAX, "digest name too long");
	o->npaths = rd_get_u16(r);
	if (r->why)
		return;
	if (o->npaths == 0 || o->npaths > RD_OPEN_PATHS_MAX) {
		rd_rcur_fail(r, "bad OPEN path count");
		return;
	}
	for (i = 0; i < o->npaths; i++)
		rd_get_str(r, &o->paths[i], RD_PATH_MAX, "path too long");
	if (o->flags & RD_OF_PARTIAL_DIR)
		rd_get_str(r, &o->partial_dir, RD_PARTIAL_DIR_MAX, "partial dir too long");
	if (o->flags & RD_OF_WINDOW)
		o->window = rd_get_u16(r);
	if (o->flags & RD_OF_SELECT) {
		o->sel.compare = rd_get_u8(r);
		o->sel.rules = rd_get_u16(r);
		o->sel.modify_window = (int32_t)rd_get_u32(r);
		o->sel.min_size = rd_get_u64(r);
		o->sel.max_size = rd_get_u64(r);
		for (i = 0; i < o->npaths; i++) {
			o->sel.pflags[i] = rd_get_u8(r);
			o->sel.skip[i] = rd_get_u16(r);
		}
		o->sel.nrules = rd_get_u16(r);
		o->sel.nnames = rd_get_u32(r);
	}
	if (o->flags & RD_OF_MIRROR) {
		o->mir.flags = rd_get_u16(r);
		o->mir.max_delete = (int64_t)rd_get_u64(r);
	}
	if (o->flags & RD_OF_DESTS)
		get_dests(r, &o->dests);
}

static void get_file(struct rd_rcur *r, struct rd_msg_file *f)
{
	f->id = rd_get_u32(r);
	f->type = rd_get_u8(r);
	f->flags = rd_get_u8(r);
	f->mode = rd_get_u32(r);
	f->uid = rd_get_u32(r);
	f->gid = rd_get_u32(r);
	f->size = rd_get_u64(r);
	f->mtime_sec = (int64_t)rd_get_u64(r);
	f->mtime_nsec = rd_get_u32(r);
	rd_get_str(r, &f->path, RD_PATH_MAX, "path too long");
	rd_get_str(r, &f->target, RD_PATH_MAX, "symlink target too long");
}

static void get_get(struct rd_rcur *r, struct rd_msg_get *g)
{
	unsigned i;

	g->id = rd_get_u32(r);
	g->kind = rd_get_u8(r);
	g->slot = rd_get_u32(r);
	g->chunk = rd_get_u64(r);
	g->addr = rd_get_u64(r);
	g->rkey = rd_get_u32(r);
	g->len = rd_get_u32(r);
	g->seq = rd_get_u64(r);
	if (r->why || !(g->kind & RD_GET_RAILS))
		return;
	g->kind &= (uint8_t)~RD_GET_RAILS;
	/* The other rails' keys: only from a receiver on several rails. */
	g->nx = rd_get_u8(r);
	if (!r->why && (g->nx == 0 || g->nx > RD_RAILS_MAX - 1)) {
		rd_rcur_fail(r, "bad rail key count");
		return;
	}
	for (i = 0; i < g->nx; i++)
		g->xrkey[i] = rd_get_u32(r);
}

static void get_rails(struct rd_rcur *r, struct rd_msg_rails *m)
{
	const uint8_t *p;
	unsigned i;

	m->n = rd_get_u8(r);
	if (!r->why && m->n > RD_RAILS_MAX - 1) {
		rd_rcur_fail(r, "too many rails");
		return;
	}
	for (i = 0; i < m->n && !r->why; i++) {
		m->a[i].family = rd_get_u8(r);
		p = rd_rcur_take(r, 16);
		if (p)
			memcpy(m->a[i].addr, p, 16);
	}
}

static void get_data(struct rd_rcur *r, struct rd_msg_data *d)
{
	const uint8_t *p;

	d->id = rd_get_u32(r);
	d->kind = rd_get_u8(r);
	d->slot = rd_get_u32(r);
	d->chunk = rd_get_u64(r);
	d->len = rd_get_u32(r);
	d->seq = rd_get_u64(r);
	d->dlen = rd_get_u8(r);
	if (r->why)
		return;
	if (d->dlen > RD_DIGEST_MAX) {
		rd_rcur_fail(r, "digest too long");
		return;
	}
	p = rd_rcur_take(r, d->dlen);
	if (p && d->dlen)
		memcpy(d->digest, p, d->dlen);
}

static void get_meta(struct rd_rcur *r, struct rd_msg_meta *m)
{
	m->id = rd_get_u32(r);
	m->kind = rd_get_u8(r);
	m->flags = rd_get_u8(r);
	switch (m->kind) {
	case RD_META_XATTR:
		rd_get_str(r, &m->name, RD_XATTR_NAME_MAX, "xattr name too long");
		m->vlen = rd_get_u32(r);
		if (r->why)
			return;
		if (m->vlen > RD_XATTR_VAL_MAX) {
			rd_rcur_fail(r, "xattr value too long");
			return;
		}
		m->value = rd_rcur_take(r, m->vlen);
		break;
	case RD_META_ACL:
		m->acl_type = rd_get_u8(r);
		m->n = rd_get_u16(r);
		if (r->why)
			return;
		if (m->n > RD_ACL_MAX) {
			rd_rcur_fail(r, "bad ACL entry count");
			return;
		}
		m->raw = rd_rcur_take(r, (size_t)m->n * 6);
		break;
	case RD_META_SPARSE:
		m->n = rd_get_u16(r);
		if (r->why)
			return;
		if (m->n > RD_SPARSE_MAX) {
			rd_rcur_fail(r, "too many sparse extents");
			return;
		}
		m->raw = rd_rcur_take(r, (size_t)m->n * 16);
		break;
	case RD_META_RANGE:
		m->job = rd_get_u64(r);
		m->off = rd_get_u64(r);
		m->len = rd_get_u64(r);
		break;
	default:
		rd_rcur_fail(r, "unknown META kind");
		break;
	}
}

static void get_payload(struct rd_rcur *r, struct rd_msg *m)
{
	unsigned i;

	switch (m->hdr.type) {
	case RD_MSG_OPEN:
		get_open(r, &m->u.open);
		break;
	case RD_MSG_OPEN_OK:
		m->u.open_ok.flags = rd_get_u32(r);
		m->u.open_ok.chunk_size = rd_get_u32(r);
		rd_get_str(r, &m->u.open_ok.digest, RD_DIGEST_NAME_MAX, "digest name too long");
		if (m->u.open_ok.flags & RD_OF_WINDOW)
			m->u.open_ok.window = rd_get_u16(r);
		break;
	case RD_MSG_ERROR:
		m->u.error.code = rd_get_u16(r);
		rd_get_str(r, &m->u.error.text, RD_MSG_TEXT_MAX, "message text too long");
		break;
	case RD_MSG_FILE:
		get_file(r, &m->u.file);
		break;
	case RD_MSG_END:
		m->u.end.nfiles = rd_get_u32(r);
		break;
	case RD_MSG_GET:
		get_get(r, &m->u.get);
		break;
	case RD_MSG_RAILS:
		get_rails(r, &m->u.rails);
		break;
	case RD_MSG_LANES: {
		const uint8_t *p = rd_rcur_take(r, RD_LANE_NONCE_LEN);

		if (p)
			memcpy(m->u.lanes.nonce, p, RD_LANE_NONCE_LEN);
		break;
	}
	case RD_MSG_DATA:
		get_data(r, &m->u.data);
		break;
	case RD_MSG_CHUNK_ERR:
		m->u.chunk_err.id = rd_get_u32(r);
		m->u.chunk_err.chunk = rd_get_u64(r);
		m->u.chunk_err.code = rd_get_u16(r);
		rd_get_str(r, &m->u.chunk_err.text, RD_MSG_TEXT_MAX, "message text too long");
		break;
	case RD_MSG_DONE:
		m->u.done.id = rd_get_u32(r);
		m->u.done.status = rd_get_u16(r);
		m->u.done.bytes = rd_get_u64(r);
		rd_get_str(r, &m->u.done.text, RD_MSG_TEXT_MAX, "message text too long");
		/* RD_OF_ITEMS: two more bytes (the engine checks it was agreed) */
		if (!r->why && rd_rcur_left(r) == 2) {
			m->u.done.has_items = 1;
			m->u.done.items = rd_get_u16(r);
		}
		break;
	case RD_MSG_NOTE:
		m->u.note.code = rd_get_u16(r);
		rd_get_str(r, &m->u.note.path, RD_PATH_MAX, "note path too long");
		rd_get_str(r, &m->u.note.text, RD_MSG_TEXT_MAX, "message text too long");
		break;
	case RD_MSG_META:
		get_meta(r, &m->u.meta);
		break;
	case RD_MSG_FILES:
		m->u.files.n = rd_get_u16(r);
		m->u.files.rawlen = r->why ? 0 : rd_rcur_left(r);
		m->u.files.raw = rd_rcur_take(r, m->u.files.rawlen); /* checked in files_check */
		break;
	case RD_MSG_FILEZ:
		m->u.files.n = rd_get_u16(r);
		m->u.files.id = rd_get_u32(r);
		m->u.files.rawlen = r->why ? 0 : rd_rcur_left(r);
		m->u.files.raw = rd_rcur_take(r, m->u.files.rawlen); /* rd_proto__filez_check */
		break;
	case RD_MSG_WANT:
		rd_proto__want_get(r, &m->u.want);
		break;
	case RD_MSG_DONES:
		m->u.dones.n = rd_get_u16(r);
		if (!r->why && (m->u.dones.n == 0 || m->u.dones.n > RD_BATCH_WIDE)) {
			rd_rcur_fail(r, "bad batch entry count");
			break;
		}
		/* 12 bytes an entry, 14 with RD_OF_ITEMS: the length says which */
		if (!r->why && rd_rcur_left(r) == (size_t)m->u.dones.n * 14)
			m->u.dones.has_items = 1;
		for (i = 0; i < m->u.dones.n; i++) {
			m->u.dones.id[i] = rd_get_u32(r);
			m->u.dones.bytes[i] = rd_get_u64(r);
			if (m->u.dones.has_items)
				m->u.dones.items[i] = rd_get_u16(r);
		}
		break;
	case RD_MSG_MODULES:
		m->u.modules.flags = rd_get_u8(r);
		m->u.modules.n = rd_get_u16(r);
		if (!r->why && m->u.modules.n > RD_LIST_BATCH) {
			rd_rcur_fail(r, "too many modules in one message");
			break;
		}
		for (i = 0; i < m->u.modules.n && !r->why; i++) {
			rd_get_str(r, &m->u.modules.name[i], RD_LIST_NAME_MAX,
				   "bad module name length");
			rd_get_str(r, &m->u.modules.comment[i], RD_LIST_COMMENT_MAX,
				   "module comment too long");
		}
		break;
	case RD_MSG_RULES:
		m->u.rules.kind = rd_get_u8(r);
		m->u.rules.n = rd_get_u16(r);
		m->u.rules.rawlen = r->why ? 0 : rd_rcur_left(r);
		m->u.rules.raw = rd_rcur_take(r, m->u.rules.rawlen); /* checked in rules_check */
		break;
	case RD_MSG_DELETED:
		m->u.deleted.n = rd_get_u16(r);
		if (!r->why && (m->u.deleted.n == 0 || m->u.deleted.n > RD_DEL_BATCH)) {
			rd_rcur_fail(r, "bad DELETED count");
			break;
		}
		for (i = 0; i < m->u.deleted.n && !r->why; i++) {
			m->u.deleted.flags[i] = rd_get_u8(r);
			rd_get_str(r, &m->u.deleted.path[i], RD_PATH_MAX, "deleted path too long");
			rd_get_str(r, &m->u.deleted.text[i], RD_MSG_TEXT_MAX,
				   "message text too long");
		}
		break;
	case RD_MSG_FIN:
		m->u.fin.files_ok = rd_get_u32(r);
		m->u.fin.files_failed = rd_get_u32(r);
		m->u.fin.bytes = rd_get_u64(r);
		break;
	default: /* CREDIT: empty */
		break;
	}
}

int rd_msg_decode(const uint8_t *buf, size_t len, struct rd_msg *msg, const char **why)
{
	const char *reason = NULL;
	struct rd_rcur r;
	uint8_t reserved;

	memset(msg, 0, sizeof(*msg));
	if (!buf || len < RD_HDR_LEN) {
		reason = "message shorter than its header";
		goto out;
	}
	if (len > RD_MSG_MAX) {
		reason = "message longer than RD_MSG_MAX";
		goto out;
	}
	rd_rcur_init(&r, buf, len);
	msg->hdr.type = rd_get_u8(&r);
	reserved = rd_get_u8(&r);
	msg->hdr.credits = rd_get_u16(&r);
	msg->hdr.length = rd_get_u32(&r);
	if (msg->hdr.type == 0 ||
	    (msg->hdr.type >= RD_MSG_TYPE_MAX && msg->hdr.type != RD_MSG_WANT)) {
		reason = "unknown message type";
		goto out;
	}
	if (msg->hdr.type == RD_MSG_TLS) {
		/* lib/xport's TLS layer opens these; never a message itself. */
		reason = "TLS frame where a message was expected";
		goto out;
	}
	if (reserved) {
		reason = "reserved header byte not zero";
		goto out;
	}
	if (msg->hdr.length > RD_MSG_MAX - RD_HDR_LEN) {
		reason = "payload length over limit";
		goto out;
	}
	if (msg->hdr.length != len - RD_HDR_LEN) {
		reason = "payload length does not match message size";
		goto out;
	}
	get_payload(&r, msg);
	reason = r.why;
	if (!reason && rd_rcur_left(&r))
		reason = "trailing bytes after payload";
	if (!reason)
		reason = msg_check(msg);
out:
	if (why)
		*why = reason;
	return reason ? -RD_EPROTO : 0;
}

int rd_files_put(uint8_t *buf, size_t cap, size_t *len, const struct rd_msg_file *f)
{
	struct rd_wcur w;

	if (*len > cap || file_check(f))
		return -RD_EUSAGE;
	rd_wcur_init(&w, buf + *len, cap - *len);
	put_file(&w, f);
	if (w.full)
		return -RD_EUSAGE;
	*len += w.off;
	return 0;
}

void rd_msg_set_credits(uint8_t *buf, uint16_t credits)
{
	buf[2] = (uint8_t)(credits >> 8);
	buf[3] = (uint8_t)credits;
}
