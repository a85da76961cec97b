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
 * *ff gets the FILE flag the entry carries: RD_FF_LINKED when path was
 * remembered (a group starts), RD_FF_LINK_LAST when this was the group's
 * last link (forgotten now), else 0. The table holds at most the bytes
 * rd_tree_meta_set_links allows (32 MiB unless set); a group that does
 * not fit is not remembered (its links are sent as copies).
 */
void rd_tree_meta_set_links(struct rd_tree_meta *m, uint64_t max_bytes);

/*
 * Held directories (rd_tree_dir.c): the tree's live handles, counted and
 * linked so that the tree can be closed before the last is dropped.
 */
struct rd_tree_dirs {
	unsigned n;
	struct rd_tree_dir *head;
};
/* A handle for fd (taken; closed on failure), one reference; NULL: no memory. */
struct rd_tree_dir *rd_tree__dir_new(struct rd_tree_dirs *ds, int fd);
struct rd_tree_dir *rd_tree__dir_get(struct rd_tree_dir *d);
/* The tree is closing: its handles live on alone until their last put. */
void rd_tree__dirs_detach(struct rd_tree_dirs *ds);

/* A list instead of a walk (rd_tree_list.c). */
struct rd_tree_list;
int rd_tree__list_new(struct rd_tree_list **out, rd_tree_list_fn next, void *ctx);
void rd_tree__list_free(struct rd_tree_list *l);
int rd_tree__list_next(struct rd_tree_list *l, unsigned flags, struct rd_err *err,
		       struct rd_tree_entry *e);
const char *rd_tree_link_seen(struct rd_tree_meta *m, const struct stat *st, const char *path,
			      size_t len, unsigned *ff);

#endif
