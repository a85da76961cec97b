"""The option sets of the differential test (issues 28 and 29).

A Case is one rdcp command line and the rsync command line it must behave
like (the same options unless rsync_opts says otherwise), the shape of its
operands, and the destination it starts from. Operands are paths relative
to a side's directory, which holds src/ (the generated tree), outside/ (a
directory nothing may write into), the prior destination and any reference
directories; the runner turns them into daemon or ssh operands for rdcp.
{file} and {dir} stand for gen.PLAIN_FILE and gen.PLAIN_DIR, {lists} for
the directory of the case's list files (--files-from, --exclude-from).

SUPPORTED (at the bottom) names the (case, modes) that rdcp gets right
today: the Bazel test runs those and must pass. Everything else is PENDING:
`run.py --pending` runs it, so whoever implements an option sees how far
they got; when a pending case passes in a mode, move it to SUPPORTED.
"""

import gen

MODES = ("push", "pull", "ssh-push", "ssh-pull", "local")
REMOTE_MODES = MODES[:4]

# Tree features a case can do without (see gen.py): what a restricted case
# leaves out is itself a difference, named in the case's note.
NO_PRIOR = frozenset(gen.PRIOR_FEATURES)


class Case:
    """name: unique, "<group>.<what>"; opts: given to both tools;
    rsync_opts: the oracle's options when they differ (then `note` says
    why); srcs/dst: operands; prior: the destination before the run:
    "mirror" (dst/ is a changed copy of src's contents), "nested" (dst/src/
    is), "empty" (dst/ exists, empty), "none" (no dst); without: generator
    features left out; refs: extra sandbox dirs derived from src
    (--link-dest and friends); lists: name -> function(spec, rng) -> bytes;
    itemize: compare the -i lines; check: "trees" (compare the sides),
    "rsync_quiet_after" (after the tool, `rsync -ani` finds nothing to do),
    "untouched_after_rsync" (after rsync, the tool changes nothing, not even
    a ctime), "ni_quiet_after_rsync" (after rsync, the tool's -n -i lists
    nothing); runs: how many times the command runs on each side; empty_src:
    the source directory is empty; dst_edit: function(prior, src, rng)
    that changes the prior destination's spec (files only the receiving
    side has, e.g. its own merge files); expect: "rsync" (do as rsync does) or
    "refuse" (where rdcp must differ on purpose: exit non-zero and leave the
    destination as it was; the note says why)."""

    def __init__(self, name, opts, srcs=("src/",), dst="dst/", prior="mirror", rsync_opts=None,
                 without=(), refs=(), lists=None, itemize=False, check="trees", runs=1,
                 empty_src=False, dst_edit=None, expect="rsync", issue=28, note=""):
        self.name = name
        self.opts = list(opts)
        self.rsync_opts = list(rsync_opts) if rsync_opts is not None else list(opts)
        self.srcs = list(srcs)
        self.dst = dst
        self.prior = prior
        self.feats = gen.ALL_FEATURES - frozenset(without)
        self.refs = tuple(refs)
        self.lists = lists or {}
        self.itemize = itemize
        self.check = check
        self.runs = runs
        self.empty_src = empty_src
        self.dst_edit = dst_edit
        self.expect = expect
        self.issue = issue
        self.note = note


def _listable(spec, rng, sep):
    """Some paths of spec, for --files-from: files and directories, a
    nested one under a listed one, and a path that does not exist."""
    paths = sorted(p for p in spec if p and (sep == b"\0" or b"\n" not in p and b"\r" not in p))
    pick = rng.sample(paths, min(len(paths), rng.randint(3, 8)))
    pick.append(gen.PLAIN_FILE)
    return sep.join(pick) + sep


def files_list(spec, rng):
    return _listable(spec, rng, b"\n")


def files_list0(spec, rng):
    return _listable(spec, rng, b"\0")


def files_list_missing(spec, rng):
    return _listable(spec, rng, b"\n") + b"no/such/file\n"


def keep_rules(prior, src, rng):
    """The receiver's own per-directory merge files (".keep", which the
    source does not have): in the destination's root and some of its
    directories, protect rules ("P", "protect", "-" without a side, "+"
    before them, a "!") that name some of the extras the deletion would
    remove, and sometimes the file itself. Not in a directory that is in a
    file's way: a rule there that keeps it makes the file fail, and rdcp
    then keeps its parents' extras (a failure under a directory keeps
    them), where rsync deleted them before (lib/sink/mirror_test.c covers
    a merge file inside a directory being deleted)."""
    dirs = [d for d in sorted(p for p, n in prior.items() if n.kind == "d")
            if d in src and src[d].kind == "d"]
    pick = [b""] + rng.sample(dirs[1:], min(3, len(dirs) - 1)) if dirs else []
    for d in pick:
        pre = d + b"/" if d else b""
        extras = sorted(p[len(pre):] for p in prior if p.startswith(pre) and p not in src
                        and b"/" not in p[len(pre):] and p[len(pre):] and b"\n" not in p)
        lines = []
        for x in rng.sample(extras, min(len(extras), rng.randint(1, 3))):
            lines.append(rng.choice([b"P ", b"protect ", b"- ", b"P /"]) + x)
        lines += rng.sample([b"P *.old", b"+ *.tmp", b"- *.tmp", b"P .keep", b"P */",
                             b"risk *.bak"], rng.randint(1, 3))
        if rng.random() < 0.2:
            lines.insert(0, b"!")
        n = gen.Node("f", 0o644, 1500000000 * 10**9, None, None, ("literal", b"\n".join(lines) + b"\n"))
        prior[pre + b".keep"] = n


EXCLUDES = b"# excluded\n*.tmp\n\ncache/\n/top.txt\n; also a comment\ndeep/**/z.dat\n"
INCLUDES = b"keep.log\n*/\n*.dat\n"


def _fixed(body):
    return lambda spec, rng: body


C = []
A = ["-a"]

# --- issue 28 point 1: directory rules ---------------------------------
C += [
    Case("dir.contents", A, ["src/"], "dst/", "mirror"),
    Case("dir.contents-dst-noslash", A, ["src/"], "dst", "mirror"),
    Case("dir.into", A, ["src"], "dst/", "nested"),
    Case("dir.into-dst-noslash", A, ["src"], "dst", "nested"),
    Case("dir.new-contents", A, ["src/"], "dst/", "none"),
    Case("dir.new-contents-dst-noslash", A, ["src/"], "dst", "none"),
    Case("dir.new-into", A, ["src"], "dst/", "none"),
    Case("dir.new-into-dst-noslash", A, ["src"], "dst", "none"),
    Case("dir.empty-dst-contents", A, ["src/"], "dst/", "empty"),
    Case("dir.empty-dst-into", A, ["src"], "dst/", "empty"),
    Case("dir.rerun-contents", A, ["src/"], "dst", "none", runs=2,
         note="the same command twice: a rerun lands in the same place"),
    Case("dir.rerun-into", A, ["src"], "dst", "none", runs=2),
    Case("dir.rerun-into-slash", A, ["src"], "dst/", "none", runs=2),
    Case("dir.file-to-new-dir", A, ["src/{file}"], "dst/", "none"),
    Case("dir.file-to-new-name", A, ["src/{file}"], "dst", "none"),
    Case("dir.file-into-dir", A, ["src/{file}"], "dst/", "mirror",
         note="where the prior plain.txt has the source's size and mtime but other bytes "
         "(seed 46) rsync keeps it (quick check)"),
    Case("dir.file-onto-file", A, ["src/{file}"], "dst/{file}", "mirror",
         note="as dir.file-into-dir (seed 46)"),
    Case("dir.subdir-contents", A, ["src/{dir}/"], "dst/", "none"),
    Case("dir.subdir-into", A, ["src/{dir}"], "dst/", "mirror"),
    Case("dir.multi-to-new-dir", A, ["src/{file}", "src/{dir}"], "dst/", "none"),
    Case("dir.multi-to-new-noslash", A, ["src/{file}", "src/{dir}"], "dst", "none"),
    Case("dir.multi-into-existing", A, ["src/{file}", "src/{dir}"], "dst/", "mirror"),
    Case("dir.mkpath", ["-a", "--mkpath"], ["src/"], "dst/a/b/", "none"),
    Case("dir.r", ["-r"], ["src/"], "dst/", "mirror",
         note="no -t: new files get the time of the copy; no -p: modes & ~umask"),
    Case("dir.r-into", ["-r"], ["src"], "dst/", "nested"),
    Case("dir.rlpt", ["-rlpt"], ["src/"], "dst/", "mirror"),
    Case("dir.rt", ["-rt"], ["src/"], "dst/", "mirror"),
    Case("dir.rlptD", ["-rlptD"], ["src/"], "dst/", "mirror"),
    Case("dir.aH", ["-aH"], ["src/"], "dst/", "mirror", without=["m_file_to_dir_full"],
         note="no full directory where a file goes: rsync 3.5.0 -H hangs there"),
    # the same option letters where rdcp's directory rule already agrees
    Case("dir.r-new-into", ["-r"], ["src"], "dst/", "empty"),
    Case("dir.rt-new-into", ["-rt"], ["src"], "dst/", "empty"),
    Case("dir.rlpt-new-into", ["-rlpt"], ["src"], "dst/", "empty"),
    Case("dir.rlptD-new-into", ["-rlptD"], ["src"], "dst/", "empty"),
    Case("dir.aH-new-into", ["-aH"], ["src"], "dst/", "empty"),
    Case("dir.aH-into", ["-aH"], ["src"], "dst/", "nested", without=["m_file_to_dir_full"],
         note="no full directory where a file goes: rsync 3.5.0 -H hangs there"),
    Case("dir.relative-dot", ["-aR"], ["src/./{dir}"], "dst/", "mirror"),
    Case("dir.relative", ["-aR"], ["src/{dir}"], "dst/", "none",
         note="not pull or ssh-pull: a remote -R path is the path in the module (or from /), "
         "so rsync's own pull lands it deeper than the local oracle does"),
]

# --- issue 28 point 2: quick check and its options ---------------------
C += [
    Case("qc.default", A, ["src/"], "dst/", "mirror",
         note="size+mtime equal: skipped unread (kept different bytes stay)"),
    Case("qc.default-into", A, ["src"], "dst/", "nested", without=NO_PRIOR - {"m_same_stat"},
         note="dst/src/ differs only by same size+mtime files: rsync keeps them"),
    Case("qc.checksum", ["-a", "-c"], ["src/"], "dst/", "mirror"),
    Case("qc.size-only", ["-a", "--size-only"], ["src/"], "dst/", "mirror"),
    Case("qc.ignore-times", ["-a", "-I"], ["src/"], "dst/", "mirror"),
    Case("qc.update", ["-a", "-u"], ["src/"], "dst/", "mirror"),
    Case("qc.ignore-existing", ["-a", "--ignore-existing"], ["src/"], "dst/", "mirror",
         note="seed 1: rsync 3.5.0 skips a directory where a file is and then sets the "
         "directory's mtime on that file; rdcp leaves the file as it is"),
    Case("qc.existing", ["-a", "--existing"], ["src/"], "dst/", "mirror"),
    Case("qc.max-size", ["-a", "--max-size=5K"], ["src/"], "dst/", "mirror"),
    Case("qc.min-size", ["-a", "--min-size=2K"], ["src/"], "dst/", "mirror"),
    Case("qc.modify-window", ["-a", "--modify-window=2"], ["src/"], "dst/", "mirror"),
    Case("qc.whole-file", ["-a", "-W"], ["src/"], "dst/", "mirror"),
]

# --- issue 28 point 3: selection ----------------------------------------
F = ["-a"]
C += [
    Case("filter.exclude", F + ["--exclude=*.tmp"]),
    Case("filter.exclude-dir", F + ["--exclude=cache/"]),
    Case("filter.exclude-anchored", F + ["--exclude=/top.txt"]),
    Case("filter.exclude-path", F + ["--exclude=x/y"]),
    Case("filter.exclude-doublestar", F + ["--exclude=deep/**"]),
    Case("filter.exclude-doublestar-mid", F + ["--exclude=**/y/*.dat"]),
    Case("filter.exclude-question", F + ["--exclude=co?e"]),
    Case("filter.exclude-class", F + ["--exclude=[abx]*"]),
    Case("filter.exclude-escaped", F + [r"--exclude=\[br\]", r"--exclude=star\*"]),
    Case("filter.exclude-space", F + ["--exclude=* *"]),
    Case("filter.include-first", F + ["--include=keep.log", "--exclude=*.log"]),
    Case("filter.exclude-first", F + ["--exclude=*.log", "--include=keep.log"]),
    Case("filter.only-dat", F + ["--include=*/", "--include=*.dat", "--exclude=*"]),
    Case("filter.rules", F + ["--filter=- *.o", "--filter=+ core", "--filter=- co*",
                              "--filter=-/ build"]),
    Case("filter.exclude-from", F + ["--exclude-from={lists}/excl"],
         lists={"excl": _fixed(EXCLUDES)}),
    Case("filter.include-from", F + ["--include-from={lists}/incl", "--exclude=*"],
         lists={"incl": _fixed(INCLUDES)}),
    Case("filter.F", F + ["-F"]),
    Case("filter.FF", F + ["-FF"]),
    Case("filter.dir-merge", F + ["--filter=: .rsync-filter"]),
    Case("filter.files-from", F + ["--files-from={lists}/files"], prior="empty",
         lists={"files": files_list}, note="-a does not imply -r with --files-from"),
    Case("filter.files-from-prior", F + ["--files-from={lists}/files"],
         lists={"files": files_list}),
    Case("filter.files-from-r", F + ["-r", "--files-from={lists}/files"], prior="empty",
         lists={"files": files_list}),
    Case("filter.files-from0", F + ["--from0", "--files-from={lists}/files0"], prior="empty",
         lists={"files0": files_list0}),
    Case("filter.files-from-missing", F + ["--files-from={lists}/files"], prior="empty",
         lists={"files": files_list_missing}, note="a listed path that is not there: 23"),
    Case("filter.exclude-into", F + ["--exclude=*.tmp", "--exclude=/src/top.txt"], ["src"],
         "dst/", "nested"),
]

# --- issue 28 point 4: dry run and itemized changes ---------------------
C += [
    Case("report.dry-run", ["-a", "-n"]),
    Case("report.dry-run-new", ["-a", "-n"], ["src/"], "dst/", "none"),
    Case("report.dry-run-itemize", ["-a", "-n", "-i"], itemize=True),
    Case("report.dry-run-itemize-new", ["-a", "-n", "-i"], ["src/"], "dst/", "none",
         itemize=True),
    Case("report.itemize", ["-a", "-i"], itemize=True),
    Case("report.itemize-checksum", ["-a", "-c", "-i"], itemize=True),
    Case("report.itemize-new", ["-a", "-i"], ["src/"], "dst/", "none", itemize=True),
    Case("report.itemize-new-into", ["-a", "-i"], ["src"], "dst/", "none", itemize=True),
    Case("report.dry-run-itemize-checksum", ["-a", "-n", "-c", "-i"], itemize=True),
    Case("report.itemize-filter", ["-a", "-i", "--exclude=*.tmp"], itemize=True),
]

# --- issue 28 acceptance: each tool agrees the other left nothing to do -
C += [
    Case("xcheck.rsync-after-rdcp", A, ["src/"], "dst/", "mirror", check="rsync_quiet_after",
         note="after `rdcp -a src/ dst/`, `rsync -ani src/ dst/` lists nothing"),
    Case("xcheck.rsync-after-rdcp-into", A, ["src"], "dst/", "nested",
         check="rsync_quiet_after"),
    Case("xcheck.rsync-after-rdcp-new", A, ["src/"], "dst/", "none", check="rsync_quiet_after"),
    Case("xcheck.rdcp-after-rsync", A, ["src/"], "dst/", "mirror",
         check="untouched_after_rsync",
         note="after `rsync -a src/ dst/`, `rdcp -a src/ dst/` changes nothing (no ctime)"),
    Case("xcheck.rdcp-after-rsync-into", A, ["src"], "dst/", "nested",
         check="untouched_after_rsync"),
    Case("xcheck.rdcp-ni-after-rsync", A, ["src/"], "dst/", "mirror",
         check="ni_quiet_after_rsync",
         note="after `rsync -a src/ dst/`, `rdcp -ani src/ dst/` lists nothing"),
]

# --- issue 28 point 6: accepted as rsync does ---------------------------
C += [
    Case("opt.z", ["-az"]),
    Case("opt.partial", ["-a", "--partial"]),
    Case("opt.x", ["-ax"]),
    Case("opt.L", ["-aL"], without=["dangling", "abs_symlinks"],
         note="no dangling or absolute links: rsync -L fails on the first (23) and would "
         "copy what the second point at (/)"),
    Case("opt.chmod", ["-a", "--chmod=D750,F640"]),
    Case("opt.numeric-ids", ["-a", "--numeric-ids"]),
    Case("opt.one-letter-group", ["-rlptgoD"]),
    Case("opt.bwlimit", ["-a", "--bwlimit=50M"], ["src"], "dst/", "empty", issue=29,
         note="the same tree at a rate limit (the rate itself is tested elsewhere)"),
]

# --- issue 29 point 1: deletion -----------------------------------------
D = ["-a", "--delete"]
C += [
    Case("del.delete", D, issue=29),
    Case("del.before", ["-a", "--delete-before"], issue=29),
    Case("del.during", ["-a", "--delete-during"], issue=29),
    Case("del.delay", ["-a", "--delete-delay"], issue=29),
    Case("del.after", ["-a", "--delete-after"], issue=29),
    Case("del.into", D, ["src"], "dst/", "nested", issue=29),
    Case("del.excluded", D + ["--delete-excluded", "--exclude=*.tmp", "--exclude=cache/"],
         issue=29),
    Case("del.excluded-kept", D + ["--exclude=*.tmp", "--exclude=cache/"], issue=29,
         note="without --delete-excluded, excluded destination files stay"),
    Case("del.protect", D + ["--filter=P *.log", "--filter=P cache/"], issue=29),
    Case("del.hide", D + ["--filter=H *.tmp"], issue=29),
    Case("del.max-delete", D + ["--max-delete=2"], issue=29,
         note="rsync stops at 2: exit 25; where a full directory is in a file's way (seed 9) "
         "rsync counts each directory's extras first, then the room: rdcp's receiver lets the "
         "verified file wait for the end to count the same (exit 23)"),
    Case("del.max-delete-1", D + ["--max-delete=1"], issue=29, note="as del.max-delete"),
    Case("del.ignore-errors", D + ["--ignore-errors"], issue=29),
    Case("del.force", ["-a", "--force"], issue=29),
    Case("del.dry-run-itemize", D + ["-n", "-i"], itemize=True, issue=29,
         note="a full directory in a file's way: its contents are listed as deleted, the "
         "directory itself not (rsync's make_way)"),
    Case("del.itemize", D + ["-i"], itemize=True, issue=29, note="as del.dry-run-itemize"),
    Case("del.files-from", D + ["-r", "--files-from={lists}/files"],
         lists={"files": files_list}, issue=29,
         note="deletes in the listed directories (recursed), not in their parents"),
    Case("del.files-from-missing", D + ["-r", "--files-from={lists}/files"],
         lists={"files": files_list_missing}, issue=29,
         note="a listed name that does not exist is a source error: rdcp deletes nothing "
         "more from then on (the interlock); pending: rsync 3.5.0 turns deletion off only "
         "once its sender's error arrives, and where the name comes late in its sorted list "
         "it has deleted in directories before it (seed 3)"),
    Case("del.relative", D + ["-R"], ["src/./{dir}", "src/./{file}"], "dst/", "mirror",
         issue=29, note="-R with /./: dst/dir1 is cleaned, dst/ itself is not"),
    Case("del.relative-implied", D + ["-R"], ["src/{dir}"], "dst/", "nested", issue=29,
         note="dst/src/ (implied, its extras stay) and dst/src/dir1 (cleaned); not pull or "
         "ssh-pull: see dir.relative's note"),
    Case("del.F", D + ["-F"], issue=29,
         note="the merge files travel: rdcp deletes once a directory's files are in place, so "
         "it reads the new ones, as rsync --delete-after does (del.F-after); pending: rsync "
         "--delete-during reads the old ones, and where the prior one differs (seed 24) it "
         "deletes what the new one protects"),
    Case("del.F-after", ["-a", "--delete-after", "-F"], issue=29,
         note="rsync.1's advice for merge files that travel (PER-DIRECTORY RULES AND DELETE)"),
    Case("del.FF-after", ["-a", "--delete-after", "-FF"], issue=29,
         note="-FF: the merge files do not travel; the receiver reads its own"),
    Case("del.dir-merge", ["-a", "--delete-after", "--filter=: .rsync-filter"], issue=29,
         note="--delete-after: rsync reads the merge files the transfer brought (as rdcp "
         "does in every order: see del.F; rsync's --delete-delay reads the old ones too)"),
    Case("del.dir-merge-dst", D + ["--filter=: .keep"], dst_edit=keep_rules, issue=29,
         note="protect rules in merge files only the destination has (rsync.1, PER-DIRECTORY "
         "RULES AND DELETE)"),
    Case("del.dir-merge-dst-into", D + ["--filter=: .keep"], ["src"], "dst/", "nested",
         dst_edit=keep_rules, issue=29, note="as del.dir-merge-dst, into dst/src/"),
    Case("del.empty-source", D, empty_src=True, expect="refuse", issue=29,
         note="rsync empties dst; issue 29 wants a refusal (dsync's interlock)"),
]

# --- issue 29 point 2: snapshots and backups ----------------------------
C += [
    Case("snap.link-dest", ["-a", "--link-dest=../ref"], prior="none", refs=["ref"], issue=29),
    Case("snap.link-dest-2", ["-a", "--link-dest=../ref", "--link-dest=../ref2"],
         prior="none", refs=["ref", "ref2"], issue=29),
    Case("snap.link-dest-prior", ["-a", "--link-dest=../ref"], refs=["ref"], issue=29),
    Case("snap.link-dest-delete", ["-a", "--delete", "--link-dest=../ref"], refs=["ref"],
         issue=29),
    Case("snap.compare-dest", ["-a", "--compare-dest=../ref"], prior="none", refs=["ref"],
         issue=29),
    Case("snap.copy-dest", ["-a", "--copy-dest=../ref"], prior="none", refs=["ref"],
         issue=29),
    Case("backup.backup", ["-a", "--backup"], issue=29),
    Case("backup.suffix", ["-a", "--backup", "--suffix=.bak"],
         without=["long_names", "ns_times"], issue=29,
         note="a 255-byte name has no room for a suffix: rsync replaces a symlink without "
         "its backup, rdcp keeps the old entry (nothing lost), both exit 23; whole-second "
         "times: the trees without long names draw a prior file with other bytes in the "
         "same second, which rsync's whole-second quick check leaves (as without -b)"),
    Case("backup.dir", ["-a", "--backup", "--backup-dir=../bak"], issue=29),
    Case("backup.dir-delete", ["-a", "--delete", "--backup", "--backup-dir=../bak"], issue=29),
    Case("backup.dir-suffix", ["-a", "-b", "--backup-dir=../bak", "--suffix=.old"],
         without=["long_names", "ns_times"], issue=29, note="as backup.suffix"),
]

# --- issue 29 point 3: moving --------------------------------------------
C += [
    # (without m_same_stat: a file the destination has with the source's size
    # and mtime but other bytes is compared, and fixed, before its source
    # goes, where rsync removes it on the quick check's word; mirror_guest.sh
    # checks that difference)
    Case("move.remove-source-files", ["-a", "--remove-source-files"], without=["m_same_stat"],
         issue=29),
    Case("move.remove-source-files-new", ["-a", "--remove-source-files"], prior="none",
         issue=29),
    Case("move.remove-source-files-into", ["-a", "--remove-source-files"], ["src"], "dst/",
         "nested", without=["m_same_stat"], issue=29),
]

# --- one kind of prior-destination change at a time ----------------------
# `-a src dst/` onto dst/src/ made by an earlier copy and then changed in one
# way only (gen.PRIOR_FEATURES): which changes rdcp brings back in line as
# rsync does.
# rdcp compares mtimes to the nanosecond by default (issue 28: "ns where
# both sides have it"), rsync to the second: prior.near (a same-size file
# whose mtime differs below the second) is held to `rsync
# --modify-window=-1`, rsync's nanosecond comparison.
for _k in gen.PRIOR_FEATURES:
    _near = _k == "m_near"
    C.append(Case("prior." + _k[2:].replace("_", "-"), A, ["src"], "dst/", "nested",
                  rsync_opts=A + ["--modify-window=-1"] if _near else None,
                  without=NO_PRIOR - {_k},
                  note="dst/src/ differs from src/ only by %s%s" % (
                      _k, "; oracle rsync --modify-window=-1 (nanoseconds); pending: where "
                      "the source has 0 ns (seed 3) rdcp compares the second (a side without "
                      "nanoseconds) and rsync -1 the nanosecond" if _near else "")))

CASES = {c.name: c for c in C}
assert len(CASES) == len(C), "duplicate case names"

# (case, modes) that rdcp passes today: the Bazel test runs these. Move a
# case here (with the modes it passes in) when `run.py --pending` shows it
# passing; never add one that needs a restricted tree without saying so in
# its note.
R = REMOTE_MODES
M = MODES
# not pull, ssh-pull: see dir.relative's note
NOPULL = ("push", "ssh-push", "local")
# not a daemon push: rdcpd keeps no setuid/setgid bits for its clients (by
# design, until modules map uids), so it touches the modes rsync set
NODPUSH = ("pull", "ssh-push", "ssh-pull", "local")
SUPPORTED = {
    "dir.contents": M,
    "dir.contents-dst-noslash": M,
    "dir.into": M,
    "dir.into-dst-noslash": M,
    "dir.new-contents": M,
    "dir.new-contents-dst-noslash": M,
    "dir.new-into": M,
    "dir.new-into-dst-noslash": M,
    "dir.empty-dst-contents": M,
    "dir.empty-dst-into": M,
    "dir.rerun-contents": M,
    "dir.rerun-into": M,
    "dir.rerun-into-slash": M,
    "dir.file-to-new-dir": M,
    "dir.file-to-new-name": M,
    "dir.file-into-dir": M,
    "dir.file-onto-file": M,
    "dir.subdir-contents": M,
    "dir.subdir-into": M,
    "dir.multi-to-new-dir": M,
    "dir.multi-to-new-noslash": M,
    "dir.multi-into-existing": M,
    "dir.mkpath": M,
    "dir.aH": M,
    "dir.aH-new-into": M,
    "dir.aH-into": M,
    "dir.relative-dot": M,
    "dir.relative": NOPULL,
    "qc.default": M,
    "qc.default-into": M,
    "qc.checksum": M,
    "qc.whole-file": M,
    "opt.z": M,
    "opt.partial": M,
    "opt.x": M,
    "opt.chmod": M,
    "opt.numeric-ids": M,
    "opt.one-letter-group": M,
    "report.itemize-checksum": NODPUSH,
    "report.itemize-new": M,
    "report.itemize-new-into": M,
    "qc.size-only": M,
    "qc.ignore-times": M,
    "qc.update": M,
    "qc.existing": M,
    "qc.max-size": M,
    "qc.min-size": M,
    "qc.modify-window": M,
    "filter.exclude": M,
    "filter.exclude-dir": M,
    "filter.exclude-anchored": M,
    "filter.exclude-path": M,
    "filter.exclude-doublestar": M,
    "filter.exclude-doublestar-mid": M,
    "filter.exclude-question": M,
    "filter.exclude-class": M,
    "filter.exclude-escaped": M,
    "filter.exclude-space": M,
    "filter.include-first": M,
    "filter.exclude-first": M,
    "filter.only-dat": M,
    "filter.rules": M,
    "filter.exclude-from": M,
    "filter.include-from": M,
    "filter.F": M,
    "filter.FF": M,
    "filter.dir-merge": M,
    "filter.files-from": M,
    "filter.files-from-prior": M,
    "filter.files-from-r": M,
    "filter.files-from0": M,
    "filter.files-from-missing": M,
    "filter.exclude-into": M,
    "report.dry-run": M,
    "report.dry-run-new": M,
    # a daemon push keeps no setuid/setgid bits by design: -i says 'p' there
    "report.itemize": NODPUSH,
    "report.itemize-filter": NODPUSH,
    "report.dry-run-itemize": NODPUSH,
    "report.dry-run-itemize-checksum": NODPUSH,
    "report.dry-run-itemize-new": M,
    "xcheck.rsync-after-rdcp": M,
    "xcheck.rsync-after-rdcp-into": M,
    "xcheck.rsync-after-rdcp-new": M,
    "xcheck.rdcp-after-rsync": NODPUSH,
    "xcheck.rdcp-after-rsync-into": NODPUSH,
    "prior.same-stat": M,
    "prior.content": M,
    "prior.newer": M,
    "prior.meta": M,
    "prior.deleted": M,
    "prior.extra": M,
    "prior.file-to-dir": M,
    "prior.file-to-dir-full": M,
    "prior.dir-to-file": M,
    "prior.file-to-link": M,
    "prior.link-to-file": M,
    "prior.dir-to-link": M,
    "prior.file-to-fifo": M,
    "prior.hl-break": M,
    "prior.hl-join": M,
    "prior.retarget": M,
    "opt.bwlimit": M,
    # issue 29 point 2. A daemon push keeps no setuid/setgid bits, so a file
    # with them never matches its --link-dest/--compare-dest twin there (rsync
    # links it): push is left out of those; the host test covers daemon pushes.
    "snap.link-dest": NODPUSH,
    "snap.link-dest-2": NODPUSH,
    "snap.link-dest-prior": NODPUSH,
    "snap.link-dest-delete": NODPUSH,
    "snap.compare-dest": NODPUSH,
    "snap.copy-dest": M,
    "backup.backup": M,
    "backup.suffix": M,
    "backup.dir": M,
    "backup.dir-suffix": M,
    # issue 29: deletion (10 seeds each, every mode)
    "del.delete": M,
    "del.before": M,
    "del.during": M,
    "del.delay": M,
    "del.after": M,
    "del.into": M,
    "del.excluded": M,
    "del.excluded-kept": M,
    "del.protect": M,
    "del.hide": M,
    "del.ignore-errors": M,
    "del.force": M,
    "del.empty-source": M,
    "del.files-from": M,
    "del.relative": M,
    "del.relative-implied": NOPULL,
    "del.F-after": M,
    "del.FF-after": M,
    "del.dir-merge": M,
    "del.dir-merge-dst": M,
    "del.dir-merge-dst-into": M,
    # -i: a daemon push keeps no setuid/setgid bits by design (as report.itemize)
    "del.max-delete": M,
    "del.max-delete-1": M,
    "del.itemize": NODPUSH,
    "del.dry-run-itemize": NODPUSH,
    "backup.dir-delete": M,
    # issue 29 point 3 (a pull: the server removes, its module allowing it)
    "move.remove-source-files": M,
    "move.remove-source-files-new": M,
    "move.remove-source-files-into": M,
}


def supported_pairs():
    return [(CASES[n], m) for n, ms in SUPPORTED.items() for m in ms]


def pending_pairs():
    return [(c, m) for c in C for m in MODES if m not in SUPPORTED.get(c.name, ())]
