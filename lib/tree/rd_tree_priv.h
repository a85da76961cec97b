/* SPDX-License-Identifier: MIT */
/* Private to lib/tree: metadata beyond stat (rd_tree_meta.c). */
#ifndef RDCP_TREE_RD_TREE_PRIV_H
#define RDCP_TREE_RD_TREE_PRIV_H

#include <sys/stat.h>

#include "lib/tree/rd_tree.h"

struct rd_tree_meta;

int rd_tree_meta_new(struct rd_tree_meta **out);
void rd_tree_meta_free(struct rd_tree_meta *m); /* accepts NULL */

/*
 * Fill e->meta / e->nmeta / e->note for the REG or DIR entry open as fd
 * (stat st) as flags ask. Never fails the entry: what cannot be read
 * becomes e->note. Returns 0 or -RD_ENOMEM.
 */
int rd_tree_meta_read(struct rd_tree_meta *m, int fd, const struct stat *st, unsigned flags,
		      struct rd_tree_entry *e);

/*
 * Hard links (-H): a regular file with st_nlink > 1 seen before under
 * another wire path? Returns that path (NUL-terminated, valid until the
 * next call) or NULL, remembering path for the group's later members.
 * The table forgets a group once all its links were seen, and holds at
 * most RD_TREE_LINKS_MAX groups (beyond that, links are sent as copies).
 */
#define RD_TREE_LINKS_MAX 65536
const char *rd_tree_link_seen(struct rd_tree_meta *m, const struct stat *st, const char *path,
			      size_t len);

#endif
