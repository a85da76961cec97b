/* SPDX-License-Identifier: MIT */
/*
 * rsync's --chmod (rsync.1): comma-separated chmod(1) modes applied to the
 * permissions the sender supplies, as though the source had them.
 *
 *	ITEM   := [D|F] ( OCTAL | [ugoa]* OP ( [rwxXst]* | u | g | o ) )
 *	OP     := '+' | '-' | '='
 *
 * D: directories only, F: everything but directories. OCTAL (0..7777)
 * sets the permission bits outright. Without u/g/o/a the bits are those
 * of "a" less the umask given to rd_chmod_parse() (chmod(1)'s rule);
 * 's' then means setuid, with u setuid, with g setgid (a: both); 't' the
 * sticky bit. X: execute for directories, and for files that had an
 * execute bit before any item applied. "g=u" copies a class's bits (one
 * class, no letters beside it). "=" sets the classes' rwx and keeps their
 * special bits, except that a copy clears the special bit of each class it
 * sets (u setuid, g setgid, o sticky) and "u=rws" sets setuid afresh (as
 * rsync does). One operator per item: "u+r-w" is two items, "u+r,u-w".
 */
#ifndef RDCP_BASE_RD_CHMOD_H
#define RDCP_BASE_RD_CHMOD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RD_CHMOD_ITEMS_MAX 64 /* items in all --chmod options */

struct rd_chmod_item {
	uint8_t only;	/* 0, 'D' or 'F' */
	uint8_t op;	/* '+', '-', '=' or '0' (octal: set) */
	uint8_t x_keep; /* X */
	uint16_t who;	/* 0700/0070/0007 mask of the classes named (0: none) */
	uint16_t bits;	/* permission bits to add/remove/set (0..07777) */
	uint16_t copy;	/* 0, or the class copied: 0700, 0070 or 0007 */
	uint16_t mask;	/* bits a copy may give (the umask's complement without a class) */
	uint16_t clr;	/* '=': special bits it clears beside the classes' rwx */
};

struct rd_chmod {
	unsigned n;
	struct rd_chmod_item item[RD_CHMOD_ITEMS_MAX];
};

/*
 * Append the items of one --chmod argument to c. umask: the bits taken
 * off where no class is named. 0, or -1 (c unchanged) for a string that
 * is not one, or when c would hold more than RD_CHMOD_ITEMS_MAX items.
 */
int rd_chmod_parse(struct rd_chmod *c, const char *s, mode_t umask);

/* mode (st_mode, type bits kept) after every item of c, in order. */
uint32_t rd_chmod_apply(const struct rd_chmod *c, uint32_t mode);

/* The permission bits of mode as ls and rsync's %B show them: "rwsr-x--T". */
void rd_perm_string(char out[10], uint32_t mode);

#endif
