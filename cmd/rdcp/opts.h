/* SPDX-License-Identifier: MIT */
/*
 * rdcp's command line, parsed as rsync parses its own (rsync.1 is the
 * specification wherever rdcp offers an rsync option):
 *
 *  - long options by their whole name only, as rsync does: "--part" is
 *    no abbreviation of anything (getopt_long's unique prefixes once made
 *    "--partial" the "--partial-dir" that ate the next operand);
 *  - "--name=value" or "--name value"; short options bundle ("-avh"), and
 *    a short option's value follows it in the same word ("-essh", "-e=ssh")
 *    or in the next one;
 *  - options and operands in any order; "--" ends the options;
 *  - "--no-NAME" (and "--no-X" for a short letter) turns off what NAME
 *    turns on, for the options rsync allows it on ("-a --no-o");
 *  - "-h" is --human-readable, and help only when it is the only argument
 *    (rsync's rule); --help is always help;
 *  - rsync options rdcp does not offer are refused by name with one
 *    sentence saying what to use instead (also listed in rdcp(1)).
 *
 * Pure: no I/O, no exit; a message in the result says what was wrong.
 */
#ifndef RDCP_CMD_RDCP_OPTS_H
#define RDCP_CMD_RDCP_OPTS_H

#include <stddef.h>
#include <stdio.h>

struct rdcp_opts;

/* What rdcp_parse() found besides the options. */
struct rdcp_args {
	int help;      /* --help (or -h alone): print usage, exit 0 */
	int version;   /* --version / -V */
	int nops;      /* operands, in order */
	char **ops;    /* argc entries, allocated by rdcp_parse; free() it */
	char msg[512]; /* the usage error, when rdcp_parse returned -1 */
};

/*
 * Parse argv into *o (which rdcp_opts_defaults() prepared) and *a.
 * Returns 0, or -1 with a->msg saying which option and why (a usage
 * error: exit 1), or -2 when out of memory.
 */
int rdcp_parse(int argc, char **argv, struct rdcp_opts *o, struct rdcp_args *a);
void rdcp_opts_defaults(struct rdcp_opts *o);
void rdcp_usage(FILE *out);

#endif
