/* SPDX-License-Identifier: MIT */
/*
 * Backups on the receiving side (issue 29: rsync's --backup, --backup-dir,
 * --suffix; docs/DESIGN.md "Backups"). Before an entry is replaced by a
 * new one, or deleted (--delete), it keeps a backup name: NAME + suffix in
 * its own directory, or the same path below the backup directory, whose
 * missing directories are made with the mode of the destination's
 * directory of the same path (as rsync makes them).
 *
 * Replacing: the old entry is hard-linked to a temporary name in the
 * backup's directory and that is renamed over the backup name, so the
 * final name keeps the old entry until the caller renames the new one over
 * it: never a moment without either. Deleting: the entry is renamed to its
 * backup name. A directory is never backed up (rsync neither): a deleted
 * directory's entries are. Everything is fd-relative; the backup directory
 * is opened once (beneath the confinement root when there is one) and
 * never through a symlink below it; one on another file system is an
 * error for the entries it would take (no copying across devices).
 */
#ifndef RDCP_SINK_RD_SINK_BACKUP_H
#define RDCP_SINK_RD_SINK_BACKUP_H

#include <stddef.h>

#include "lib/base/rd_err.h"

#define RD_BACKUP_SUFFIX_MAX	 255
#define RD_BACKUP_SUFFIX_DEFAULT "~"

struct rd_backup;

/*
 * rsync's rules for the options: a suffix has no '/' and is not empty
 * without a backup directory. dir NULL: beside each entry. NULL if good,
 * else the sentence rsync says.
 */
const char *rd_backup_check(const char *dir, const char *suffix);

/*
 * dest_fd: the destination directory (what entries' rel paths are below).
 * dir: the backup directory (NULL: beside each entry), relative to the
 * destination or absolute; with root_fd >= 0 (a daemon's module) it must
 * lie beneath root_fd, where the destination is at dest_rel, and is
 * resolved there without following any symlink (".." may not leave the
 * module); with root_fd -1 (the user's own files) it is opened as the user
 * names it. Made (0777 & ~umask) when missing. suffix NULL: "~" without a
 * directory, "" with one. 0 or a negative status with err set.
 */
int rd_backup_open(struct rd_backup **out, int dest_fd, int root_fd, const char *dest_rel,
		   const char *dir, const char *suffix, struct rd_err *err);
void rd_backup_close(struct rd_backup *b); /* accepts NULL */

/*
 * Keep the entry name of dirfd (at rel below the destination) as its
 * backup: RD_BACKUP_LINK when it is about to be replaced (the caller
 * renames over name next), RD_BACKUP_MOVE when it is being deleted.
 * 0 (kept; nothing there is 0 too), or a negative status with err set.
 */
enum { RD_BACKUP_LINK = 1, RD_BACKUP_MOVE = 2 };
int rd_backup_keep(struct rd_backup *b, int dirfd, const char *name, const char *rel, int how,
		   struct rd_err *err);

/*
 * Does the backup machinery own rel (below the destination)? A name with
 * the suffix (without a backup directory: rsync's "P *SUFFIX"), or the
 * backup directory itself when it lies inside the destination. --delete
 * never removes these.
 */
int rd_backup_protects(const struct rd_backup *b, const char *rel, size_t len, int is_dir);

#endif
