/* SPDX-License-Identifier: MIT */
/* Path spellings with a meaning of their own (rsync's, issue 28). */
#ifndef RDCP_BASE_RD_PATH_H
#define RDCP_BASE_RD_PATH_H

/*
 * Does a source path name a directory's contents rather than the directory
 * itself, as rsync reads it: a trailing '/', or a last component "." or
 * ".." ("dir/", "dir/.", ".", "..")? 1 if so. "" counts as contents too.
 */
int rd_path_names_contents(const char *path);

#endif
