/* SPDX-License-Identifier: MIT */
/* Private to lib/sink: what rd_sink_meta.c may use of rd_sink.c. */
#ifndef RDCP_SINK_RD_SINK_PRIV_H
#define RDCP_SINK_RD_SINK_PRIV_H

#include <limits.h>
#include <sys/stat.h>

#include "lib/sink/rd_sink.h"

struct rd_err *rd_sink__err(struct rd_sink *s);
unsigned rd_sink__flags(const struct rd_sink *s);
const char *rd_sink__esc(struct rd_sink *s, const char *p, size_t len);
int rd_sink__fail(struct rd_sink *s, int errnum, const char *p, size_t len, const char *what);
void rd_sink__tmp_name(char *out, const char *name);
int rd_sink__open_dir(struct rd_sink *s, const char *path, size_t len, int root);
int rd_sink__place(struct rd_sink *s, const char *path, size_t len, int root, int *pfd,
		   char name[NAME_MAX + 1]);
int rd_sink__node_meta(struct rd_sink *s, int pfd, const char *name, const struct rd_sink_meta *m,
		       const char *path, size_t len);
int rd_sink__file_fd(const struct rd_sink_file *f);
/* rd_sink_items(): set it; what making an entry of S_IFMT type where st was changes */
unsigned rd_sink__set_items(struct rd_sink *s, unsigned items);
unsigned rd_sink__made_items(const struct rd_sink *s, int ret, const struct stat *st, mode_t type,
			     const struct rd_sink_meta *m);
/* rd_sink_items.c: what m changes on st (same type); a symlink made as name in pfd */
unsigned rd_sink__attr_items(const struct rd_sink *s, const struct stat *st,
			     const struct rd_sink_meta *m);
unsigned rd_sink__link_items(struct rd_sink *s, int pfd, const char *name, const char *tgt,
			     size_t tlen, const struct rd_sink_meta *m);
/* The sink's policies the items judge by (rd_sink.c) */
mode_t rd_sink__final_mode(const struct rd_sink *s, const struct rd_sink_meta *m);
int rd_sink__want_owner(const struct rd_sink *s);
int rd_sink__want_group(const struct rd_sink *s);
struct rd_sink *rd_sink__file_sink(struct rd_sink_file *f);
const char *rd_sink__file_path(const struct rd_sink_file *f, size_t *len);

#endif
