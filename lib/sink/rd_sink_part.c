// SPDX-License-Identifier: MIT
/*
 * The sink's partials (issue 11; issue 27 items 9, 10, 14, 15): which
 * file keeps one, where (--partial-dir), and what they may cost.
 *
 * Memory: a partial's bitmap costs a bit per chunk (at most
 * PARTIAL_BITMAP_MAX per file) and the sender announces the sizes, so the
 * bitmaps of the files open at once are bounded too: at most
 * RD_SINK_PARTIAL_MEM per sink; a file whose bitmap would not fit is
 * received without a partial (as if --no-partial).
 *
 * --partial-dir NAME: a directory NAME in each destination directory,
 * made 0700 when a partial first needs it. It is removed when left empty
 * only if it is rdcp's: this sink made it, or the rdcp copy that began a
 * partial this sink resumed from it had made it (its record says so,
 * RD_PARTIAL_F_DIR). Such directories are remembered by inode,
 * SINK_PDIRS_MAX at once. A directory of that name that was there before
 * is the user's, even when empty, and the name may come from a client
 * (OPEN's partial_dir).
 */
#include "lib/sink/rd_sink_priv.h"
#include "lib/base/rd_fsid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sink/rd_sink_partial.h"

int rd_sink_partial_dir_valid(const char *name)
{
	return name && name[0] && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..") &&
	       strlen(name) <= NAME_MAX - 1;
}

int rd_sink_set_partial_dir(struct rd_sink *s, const char *name)
{
	if (!rd_sink_partial_dir_valid(name))
		return rd_err_set(&s->err, RD_EUSAGE, 0,
				  "--partial-dir '%s': give one directory name (no '/'), created "
				  "inside each destination directory",
				  name ? name : "");
	snprintf(s->part_dir, sizeof(s->part_dir), "%s", name);
	return 0;
}

void rd_sink_set_chunking(struct rd_sink *s, uint32_t chunk_size, const char *digest, int has_sum)
{
	s->part_chunk = chunk_size;
	s->part_sum = has_sum;
	snprintf(s->part_digest, sizeof(s->part_digest), "%s", digest ? digest : "");
}

static struct rd_sink_pdir *pdir_find(struct rd_sink *s, const struct stat *st)
{
	unsigned i;

	for (i = 0; i < SINK_PDIRS_MAX; i++)
		if (s->pdirs[i].used && s->pdirs[i].dev == st->st_dev &&
		    s->pdirs[i].ino == st->st_ino)
			return &s->pdirs[i];
	return NULL;
}

/* A place for a directory we just made: a free one, or one no file uses now. */
static struct rd_sink_pdir *pdir_add(struct rd_sink *s, const struct stat *st)
{
	struct rd_sink_pdir *d = NULL;
	unsigned i;

	for (i = 0; i < SINK_PDIRS_MAX && !d; i++)
		if (!s->pdirs[i].used)
			d = &s->pdirs[i];
	for (i = 0; i < SINK_PDIRS_MAX && !d; i++)
		if (!s->pdirs[i].refs)
			d = &s->pdirs[i]; /* forgotten: stays if it is ever left empty */
	if (!d)
		return NULL;
	d->dev = st->st_dev;
	d->ino = st->st_ino;
	d->refs = 0;
	d->used = 1;
	return d;
}

/*
 * f's partial dir (ppfd) counts as rdcp's (made: add it if need be): f
 * holds a reference until file_free. A directory not remembered is never
 * removed.
 */
static void pdir_hold(struct rd_sink_file *f, int made)
{
	struct rd_sink *s = f->s;
	struct rd_sink_pdir *d;
	struct stat st;

	if (f->pdir || fstat(f->ppfd, &st) < 0)
		return;
	d = pdir_find(s, &st);
	if (!d && made)
		d = pdir_add(s, &st);
	if (d) {
		d->refs++;
		f->pdir = (int)(d - s->pdirs) + 1;
	}
}

/* The --partial-dir inside the file's directory: made if missing, never followed. */
int rd_sink__part_dir_open(struct rd_sink_file *f)
{
	struct rd_sink *s = f->s;
	int made;

	made = rd_mkdirat(f->pfd, s->part_dir, 0700) == 0;
	if (!made && errno != EEXIST)
		return rd_sink__ffail(f, errno, "create the partial directory for");
	f->ppfd =
	    rd_openat(f->pfd, s->part_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (f->ppfd < 0)
		return rd_sink__ffail(f, errno, "open the partial directory for");
	pdir_hold(f, made);
	return 0;
}

void rd_sink__part_release(struct rd_sink_file *f)
{
	struct rd_sink *s = f->s;
	struct rd_sink_pdir *d;
	struct stat st;

	s->part_mem -= f->part_mem;
	f->part_mem = 0;
	if (!f->pdir || f->pfd < 0)
		return;
	d = &s->pdirs[f->pdir - 1];
	f->pdir = 0;
	if (--d->refs)
		return;
	/*
	 * Ours and no file of ours uses it: remove it if empty (it holds
	 * kept partials otherwise). The name must still be the directory we
	 * made: another one renamed in under it is not ours to remove.
	 */
	if (rd_fstatat(f->pfd, s->part_dir, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_dev == d->dev && st.st_ino == d->ino &&
	    rd_unlinkat(f->pfd, s->part_dir, AT_REMOVEDIR) == 0)
		d->used = 0;
}

/*
 * Partial mode (rd_sink_partial.h): the temporary is the file's
 * deterministic partial, reused when its record matches. 1 = in use,
 * 0 = not for this file (off, a write-only module, a bitmap too large or
 * over the sink's budget), < 0 = error.
 */
int rd_sink__part_open(struct rd_sink_file *f)
{
	struct rd_sink *s = f->s;
	struct rd_partial_id id;
	size_t mem;
	int resumed, changed, ret;

	if (!s->part_chunk || (s->flags & (RD_SINK_NO_PARTIAL | RD_SINK_FRESH)) ||
	    f->m.size <= RD_SINK_SMALL_FILE)
		return 0;
	mem = rd_partial_bitmap_len(f->m.size, s->part_chunk);
	if (mem >= PARTIAL_BITMAP_MAX || mem > RD_SINK_PARTIAL_MEM - s->part_mem)
		return 0;
	memset(&id, 0, sizeof(id));
	id.size = f->m.size;
	id.mtime_sec = f->m.mtime_sec;
	id.mtime_nsec = f->m.mtime_nsec;
	id.chunk_size = s->part_chunk;
	snprintf(id.digest, sizeof(id.digest), "%s", s->part_digest);
	if (s->part_dir[0]) {
		ret = rd_sink__part_dir_open(f);
		if (ret < 0)
			return ret;
		id.dir_made = f->pdir != 0; /* its record says the dir is rdcp's */
	}
	/*
	 * The record needs no fsync: every chunk it names is compared with
	 * the sender's before it is kept. Only a trusted one (checksum none)
	 * is kept on its word, so then data and record go to disk first.
	 */
	ret = rd_partial_open(&f->part, f->ppfd >= 0 ? f->ppfd : f->pfd, f->name, &id,
			      (s->flags & RD_SINK_FSYNC) && (s->flags & RD_SINK_TRUST_PARTIAL),
			      &f->tmpfd, &resumed, &changed);
	if (ret == -EFBIG)
		return 0;
	if (ret == -EBUSY) {
		/* a session that has not ended yet (a cut link) holds it */
		snprintf(f->note, sizeof(f->note),
			 "another copy still holds its partial; receiving it whole instead");
		return 0;
	}
	if (ret < 0)
		return rd_sink__ffail(f, -ret, "create partial for");
	/* resumed from a dir the copy that began it had made: rdcp's too */
	if (f->ppfd >= 0 && resumed && rd_partial_dir_made(f->part))
		pdir_hold(f, 1);
	f->part_mem = mem;
	s->part_mem += mem;
	rd_partial_name(f->tmpname, f->name);
	f->named = 1; /* abort keeps it (with its record) for the next copy */
	if (changed)
		snprintf(f->note, sizeof(f->note),
			 "the source changed since the partial was kept; starting over");
	if (resumed && !s->part_sum && !(s->flags & RD_SINK_TRUST_PARTIAL)) {
		ret = rd_partial_reset(f->part, f->tmpfd);
		if (ret < 0)
			return rd_sink__ffail(f, -ret, "reset partial of");
		resumed = 0;
		snprintf(f->note, sizeof(f->note),
			 "checksum none cannot verify the partial kept from an earlier copy; "
			 "sending it again (--trust-partial keeps it on size and mtime)");
	}
	f->resumed = resumed;
	f->trusted = resumed && !s->part_sum;
	return 1;
}

int rd_sink_file_restart(struct rd_sink_file *f)
{
	int ret;

	if (f->exfd >= 0) {
		close(f->exfd);
		f->exfd = -1;
		f->ex_size = 0;
	}
	if (!f->part || !f->resumed)
		return 0;
	/* empty and all holes again: what the old copy held is not kept, not even zeros */
	ret = rd_partial_reset(f->part, f->tmpfd);
	if (ret == 0 && ftruncate(f->tmpfd, (off_t)f->m.size) < 0)
		ret = -errno;
	f->resumed = f->trusted = 0;
	return ret < 0 ? rd_sink__ffail(f, -ret, "reset partial of") : 0;
}
