// SPDX-License-Identifier: MIT
/*
 * rdcp's command line (opts.c): tables of argv and what they must give,
 * rsync's behaviour for the same words being the reference (rsync 3.x:
 * no abbreviations, -h is --human-readable unless alone, -P, --no-OPTION,
 * options after operands, "--" ends them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmd/rdcp/opts.h"
#include "cmd/rdcp/rdcp.h"
#include "lib/filter/rd_filter.h"
#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink.h"

#define MAXW 16

/* Parse a NULL-ended list of words (argv[0] is added). */
static int parse(struct rdcp_opts *o, struct rdcp_args *a, const char *const *words)
{
	char *argv[MAXW + 2];
	int argc = 0, r;

	argv[argc++] = (char *)"rdcp";
	while (*words && argc <= MAXW)
		argv[argc++] = (char *)*words++;
	argv[argc] = NULL;
	rdcp_opts_defaults(o);
	r = rdcp_parse(argc, argv, o, a);
	if (!r)
		rdcp_info_levels(o);
	return r;
}

#define W(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Issue 29: --link-dest & co. (one kind, in order, at most 20) and backups. */
static void test_dests(void **state)
{
	const char *w[RDCP_ALT_DIRS_MAX + 4];
	struct rdcp_opts o;
	struct rdcp_args a;
	int i;

	(void)state;
	assert_int_equal(parse(&o, &a, W("-a", "--link-dest=../s1", "--link-dest", "/abs/s0",
					 "src/", "dst/")),
			 0);
	assert_int_equal(o.alt_kind, RD_SINK_ALT_LINK);
	assert_int_equal(o.nalt, 2);
	assert_string_equal(o.alt_dirs[0], "../s1");
	assert_string_equal(o.alt_dirs[1], "/abs/s0");
	assert_int_equal(a.nops, 2);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--copy-dest=r", "-b", "s", "d")), 0);
	assert_int_equal(o.alt_kind, RD_SINK_ALT_COPY);
	assert_int_equal(o.backup, 1);
	assert_null(o.backup_dir);
	free(a.ops);
	/* --backup-dir implies -b, as rsync's */
	assert_int_equal(parse(&o, &a, W("--backup-dir=../bak", "--suffix=.old", "s", "d")), 0);
	assert_int_equal(o.backup, 1);
	assert_string_equal(o.backup_dir, "../bak");
	assert_string_equal(o.suffix, ".old");
	free(a.ops);
	/* 20 at most */
	for (i = 0; i < RDCP_ALT_DIRS_MAX + 1; i++)
		w[i] = "--compare-dest=x";
	w[i++] = "s";
	w[i++] = "d";
	w[i] = NULL;
	{
		char *argv[RDCP_ALT_DIRS_MAX + 6];
		int argc = 0;

		argv[argc++] = (char *)"rdcp";
		for (i = 0; w[i]; i++)
			argv[argc++] = (char *)w[i];
		argv[argc] = NULL;
		rdcp_opts_defaults(&o);
		assert_int_equal(rdcp_parse(argc, argv, &o, &a), -1);
		assert_non_null(strstr(a.msg, "at most 20 --compare-dest args"));
	}
}

/* The issue's cases: -avh, --partial, --checksum, each with its operands intact. */
static void test_issue_cases(void **state)
{
	struct rdcp_opts o;
	struct rdcp_args a;

	(void)state;
	/* -avh: archive, verbose, human-readable; not help */
	assert_int_equal(parse(&o, &a, W("-avh", "src", "h::m/dst")), 0);
	assert_int_equal(a.help, 0);
	assert_int_equal(o.recursive && o.preserve && o.owner && o.group, 1);
	assert_int_equal(o.verbose, 1);
	assert_int_equal(o.human, 2);
	assert_int_equal(a.nops, 2);
	assert_string_equal(a.ops[0], "src");
	assert_string_equal(a.ops[1], "h::m/dst");
	free(a.ops);
	/* --partial is itself, not --partial-dir eating "src" */
	assert_int_equal(parse(&o, &a, W("--partial", "src", "dst")), 0);
	assert_null(o.partial_dir);
	assert_int_equal(o.no_partial, 0);
	assert_int_equal(a.nops, 2);
	free(a.ops);
	/* --checksum is a switch; the operand after it stays an operand */
	assert_int_equal(parse(&o, &a, W("--checksum", "src", "dst")), 0);
	assert_int_equal(o.sel.checksum, 1);
	assert_null(o.checksum_choice);
	assert_int_equal(a.nops, 2);
	assert_string_equal(a.ops[0], "src");
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("-c", "--checksum-choice", "sha256", "s", "d")), 0);
	assert_int_equal(o.sel.checksum, 1);
	assert_string_equal(o.checksum_choice, "sha256");
	assert_int_equal(a.nops, 2);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--cc=none", "s", "d")), 0);
	assert_string_equal(o.checksum_choice, "none");
	free(a.ops);
	/* the old form names the new option */
	assert_int_equal(parse(&o, &a, W("--checksum=sha256", "s", "d")), -1);
	assert_non_null(strstr(a.msg, "--checksum-choice sha256"));
	free(a.ops);
}

struct bad {
	const char *const *argv;
	const char *says; /* in the message */
};

/* Usage errors: each names the option (and rsync's own refuses the same words). */
static void test_usage_errors(void **state)
{
	const struct bad cases[] = {
	    /* no abbreviations, as rsync 3.x (popt there matches whole names) */
	    {W("--partial-d", "x", "s", "d"), "unknown option --partial-d"},
	    {W("--part", "s", "d"), "unknown option --part"},
	    {W("--recurs", "s", "d"), "unknown option --recurs"},
	    {W("--chec", "s", "d"), "unknown option --chec"},
	    {W("-y", "s", "d"), "-y/--fuzzy is not offered"},
	    {W("-Q", "s", "d"), "unknown option -Q"},
	    {W("--verbose=2", "s", "d"), "--verbose takes no value"},
	    {W("--no-archive", "s", "d"), "cannot be turned off"},
	    {W("--no-t", "s", "d"), "always keeps modification times"},
	    {W("--no-l", "s", "d"), "symlinks as symlinks"},
	    {W("--port", "0", "s", "d"), "--port '0'"},
	    {W("--port"), "--port needs a value"},
	    {W("-e"), "-e needs a value"},
	    {W("--info=progress3x", "s", "d"), "--info 'progress3x'"},
	    {W("--info=bogus", "s", "d"), "--info 'bogus'"},
	    {W("--chmod=u+r-w", "s", "d"), "--chmod 'u+r-w'"},
	    {W("--chmod", "", "s", "d"), "--chmod ''"},
	    {W("--log-file=", "s", "d"), "--log-file: give a file name"},
	    {W("--lanes", "9", "s", "d"), "--lanes '9'"},
	    {W("--partial-dir", "a/b", "s", "d"), "--partial-dir 'a/b'"},
	    {W("--transport", "ib", "s", "d"), "--transport: 'ib'"},
	    /* rsync options rdcp does not offer: refused with what to use instead */
	    {W("--link-dest=a", "--compare-dest=b", "s", "d"),
	     "the --compare-dest option conflicts with the --link-dest option"},
	    {W("--suffix=a/b", "s", "d"), "--suffix 'a/b'"},
	    {W("--link-dest=", "s", "d"), "--link-dest '': give a directory"},
	    {W("--delete-before", "--delete-after", "s", "d"), "several --delete-WHEN"},
	    {W("--delete-delay", "--delete-after", "s", "d"), "several --delete-WHEN"},
	    {W("--max-delete=x", "s", "d"), "--max-delete=x"},
	    {W("--max-delete=-1", "s", "d"), "--max-delete=-1"},
	    {W("--delete-missing-args", "s", "d"), "--delete-missing-args is not offered"},
	    {W("--rsync-path=/x", "s", "d"), "use --remote-rdcp PATH"},
	    {W("--inplace", "s", "d"), "--inplace is not offered"},
	    {W("--stop-after=5", "s", "d"), "--stop-after is not offered"},
	    {W("--bwlimit=100b", "s", "d"), "--bwlimit=100b is too small"},
	    {W("--bwlimit", "x", "s", "d"), "--bwlimit=x is invalid"},
	    {W("-B", "1024", "s", "d"), "--chunk-size"},
	};
	struct rdcp_opts o;
	struct rdcp_args a;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = parse(&o, &a, cases[i].argv);

		if (r != -1 || !strstr(a.msg, cases[i].says))
			fail_msg("case %zu (%s ...): got %d '%s', want -1 saying '%s'", i,
				 cases[i].argv[0], r, a.msg, cases[i].says);
		free(a.ops);
	}
}

static void test_rsync_forms(void **state)
{
	struct rdcp_opts o;
	struct rdcp_args a;

	(void)state;
	/* -h alone is help (rsync's rule), --help always */
	assert_int_equal(parse(&o, &a, W("-h")), 0);
	assert_int_equal(a.help, 1);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--help")), 0);
	assert_int_equal(a.help, 1);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("-h", "s", "d")), 0);
	assert_int_equal(a.help, 0);
	assert_int_equal(o.human, 2);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("-hh", "--no-h", "s", "d")), 0);
	assert_int_equal(o.human, 0);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("-hhhh", "s", "d")), 0);
	assert_int_equal(o.human, 3);
	free(a.ops);
	/* -P is --partial --progress (undoing an earlier --no-partial) */
	assert_int_equal(parse(&o, &a, W("--no-partial", "-P", "s", "d")), 0);
	assert_int_equal(o.progress, 1);
	assert_int_equal(o.no_partial, 0);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--no-partial", "s", "d")), 0);
	assert_int_equal(o.no_partial, 1);
	free(a.ops);
	/* -a --no-o --no-g, and --no-D; order counts as in rsync */
	assert_int_equal(parse(&o, &a, W("-a", "--no-o", "--no-g", "--no-D", "s", "d")), 0);
	assert_int_equal(o.owner, 0);
	assert_int_equal(o.group, 0);
	assert_int_equal(o.meta & (RD_OF_DEVICES | RD_OF_SPECIALS), 0);
	assert_int_equal(o.recursive && o.preserve, 1);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--no-o", "-a", "s", "d")), 0);
	assert_int_equal(o.owner, 1);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--no-perms", "-r", "s", "d")), 0);
	assert_int_equal(o.preserve, 0);
	free(a.ops);
	/* values: --name=v, --name v, -eCMD, -e=CMD, -e CMD */
	assert_int_equal(parse(&o, &a, W("-essh -p 2", "s", "d")), 0);
	assert_string_equal(o.rsh, "ssh -p 2");
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("-e=myssh", "s", "d")), 0);
	assert_string_equal(o.rsh, "myssh");
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("-ave", "myssh", "s", "d")), 0);
	assert_string_equal(o.rsh, "myssh");
	assert_int_equal(o.verbose, 1);
	assert_int_equal(a.nops, 2);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--rsh=ssh", "--timeout", "5", "s", "d")), 0);
	assert_string_equal(o.rsh, "ssh");
	assert_int_equal(o.timeout_s, 5);
	free(a.ops);
	/* options after operands; "--" ends the options; "-" is an operand */
	assert_int_equal(parse(&o, &a, W("s", "d", "-r", "--", "-x", "-")), 0);
	assert_int_equal(o.recursive, 1);
	assert_int_equal(o.one_fs, 0);
	assert_int_equal(a.nops, 4);
	assert_string_equal(a.ops[2], "-x");
	assert_string_equal(a.ops[3], "-");
	free(a.ops);
	/* -V is --version */
	assert_int_equal(parse(&o, &a, W("-V")), 0);
	assert_int_equal(a.version, 1);
	free(a.ops);
	/* harmless rsync options: accepted */
	assert_int_equal(
	    parse(&o, &a,
		  W("-lt", "-W", "--no-motd", "--numeric-ids", "--fsync", "--no-i-r", "s", "d")),
	    0);
	free(a.ops);
	/* -z and its friends: accepted, a note later */
	assert_int_equal(parse(&o, &a, W("-z", "s", "d")), 0);
	assert_int_equal(o.compress, 1);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--zl=9", "s", "d")), 0);
	assert_int_equal(o.compress, 1);
	free(a.ops);
	/* --bwlimit: rsync's units, KiB unless a suffix says */
	assert_int_equal(parse(&o, &a, W("--bwlimit=10m", "s", "d")), 0);
	assert_int_equal(o.bwlimit, 10 << 20);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--bwlimit", "100", "s", "d")), 0);
	assert_int_equal(o.bwlimit, 102400);
	assert_int_equal(a.nops, 2);
	free(a.ops);
	/* --delete and its relatives (issue 29): OPEN's MIRROR flags */
	assert_int_equal(parse(&o, &a, W("-r", "--delete", "--max-delete=3", "s", "d")), 0);
	assert_int_equal(o.mir_flags, RD_MF_DELETE);
	assert_int_equal(o.max_delete, 3);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--delete", "--delete-after", "--force", "s", "d")), 0);
	assert_int_equal(o.mir_flags, RD_MF_DELETE | RD_MF_DEL_AFTER | RD_MF_FORCE);
	assert_int_equal(o.max_delete, -1);
	free(a.ops);
	assert_int_equal(parse(&o, &a,
			       W("--delete-before", "--ignore-errors", "--allow-empty-source",
				 "--del", "s", "d")),
			 -1); /* before and during */
	free(a.ops);
	assert_int_equal(
	    parse(&o, &a,
		  W("--delete-excluded", "--ignore-errors", "--allow-empty-source", "s", "d")),
	    0);
	assert_int_equal(o.mir_flags, RD_MF_DELETE | RD_MF_IGNORE_ERRORS | RD_MF_ALLOW_EMPTY);
	assert_int_equal(o.delete_excluded, 1);
	free(a.ops);
	/* -x twice, -L, --chmod twice */
	assert_int_equal(parse(&o, &a, W("-xxL", "--chmod=Dg+s", "--chmod", "F644", "s", "d")), 0);
	assert_int_equal(o.one_fs, 2);
	assert_int_equal(o.copy_links, 1);
	assert_int_equal(o.nchmod, 2);
	assert_string_equal(o.chmod[1], "F644");
	free(a.ops);
}

/* -v, -i, --out-format, --stats, --info and the levels they give. */
static void test_info_levels(void **state)
{
	struct rdcp_opts o;
	struct rdcp_args a;

	(void)state;
	assert_int_equal(parse(&o, &a, W("s", "d")), 0);
	assert_int_equal(o.info.name, 0);
	assert_int_equal(o.info.stats, 1);
	assert_int_equal(o.info.nonreg, 1);
	assert_int_equal(o.info.progress, -1); /* on a terminal only */
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("-vv", "s", "d")), 0);
	assert_int_equal(o.info.name, 2);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("-ii", "--stats", "s", "d")), 0);
	assert_int_equal(o.itemize, 2);
	assert_int_equal(o.info.name, 1);
	assert_int_equal(o.info.stats, 2);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--out-format=%n", "-vv", "--stats", "s", "d")), 0);
	assert_string_equal(o.out_format, "%n");
	assert_int_equal(o.info.stats, 3);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--info=progress2,name0,nonreg0", "-v", "s", "d")), 0);
	assert_int_equal(o.info.progress, 2);
	assert_int_equal(o.info.name, 0);
	assert_int_equal(o.info.nonreg, 0);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--info=ALL2,flist0,MISC", "s", "d")), 0);
	assert_int_equal(o.info.name, 2);
	assert_int_equal(o.info.stats, 2);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--info=none", "--progress", "s", "d")), 0);
	assert_int_equal(o.info.progress, 0);
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("-P", "s", "d")), 0);
	assert_int_equal(o.info.progress, 1);
	free(a.ops);
}

/* rsync's selection options (lib/session/rd_selopt.c, shared with rdcp-mpi): values and order. */
static void test_selection(void **state)
{
	struct rd_filter *f = NULL;
	struct rdcp_opts o;
	struct rdcp_args a;
	struct rd_err err;
	size_t len;

	(void)state;
	assert_int_equal(
	    parse(&o, &a,
		  W("-u", "--existing", "--max-size=1.5k", "--min-size", "10", "--modify-window=2",
		    "--size-only", "--exclude", "*.o", "-F", "--include=/a/", "-F", "s", "d")),
	    0);
	assert_int_equal(o.sel.rules, RD_SEL_UPDATE | RD_SEL_EXISTING);
	assert_int_equal(o.sel.max_size, 1536);
	assert_int_equal(o.sel.min_size, 10);
	assert_int_equal(o.sel.modify_window, 2);
	assert_int_equal(o.sel.compare, RD_CMP_SIZE);
	assert_int_equal(rd_selopt_any(&o.sel), 1);
	assert_int_equal(a.nops, 2);
	/* the rules in command-line order; -F once the merge, twice the hiding too */
	assert_int_equal(rd_selopt_filter(&o.sel, &f, &err), 0);
	assert_int_equal(rd_filter_count(f), 4);
	assert_string_equal(rd_filter_text(f, 0, &len), "- *.o");
	assert_string_equal(rd_filter_text(f, 2, &len), "+ /a/");
	assert_int_equal(rd_filter_has_dir_merge(f), 1);
	rd_filter_free(f);
	rd_selopt_free(&o.sel);
	free(a.ops);
	/* -I after --size-only: the last word wins; --no-update undoes -u */
	assert_int_equal(parse(&o, &a, W("--size-only", "-I", "-u", "--no-update", "s", "d")), 0);
	assert_int_equal(o.sel.compare, RD_CMP_ALL);
	assert_int_equal(o.sel.rules, 0);
	assert_int_equal(rd_selopt_any(&o.sel), 1);
	free(a.ops);
	/* defaults: nothing for the receiver to know */
	assert_int_equal(parse(&o, &a, W("s", "d")), 0);
	assert_int_equal(rd_selopt_any(&o.sel), 0);
	assert_int_equal(o.sel.max_size, RD_SIZE_NONE);
	free(a.ops);
	/* bad values name the option */
	assert_int_equal(parse(&o, &a, W("--modify-window=soon", "s", "d")), -1);
	assert_non_null(strstr(a.msg, "--modify-window 'soon'"));
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--max-size", "12Q", "s", "d")), -1);
	assert_non_null(strstr(a.msg, "--max-size=12Q is invalid"));
	free(a.ops);
	assert_int_equal(parse(&o, &a, W("--exclude-from", "/nonexistent/x", "s", "d")), 0);
	assert_int_equal(rd_selopt_filter(&o.sel, &f, &err), -RD_EUSAGE);
	assert_non_null(strstr(err.msg, "filter file /nonexistent/x"));
	rd_selopt_free(&o.sel);
	free(a.ops);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_issue_cases),
	    cmocka_unit_test(test_dests),
	    cmocka_unit_test(test_usage_errors),
	    cmocka_unit_test(test_rsync_forms),
	    cmocka_unit_test(test_info_levels),
	    cmocka_unit_test(test_selection),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
