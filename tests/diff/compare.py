"""Compare two trees the way the differential test needs: names, types,
bytes, modes, nanosecond mtimes of files, directories and symlinks, symlink
targets, hard-link groups (the partition of paths by inode) and, when asked,
owners. snapshot() reads a tree once; diff() lists every difference in
readable lines.
"""

import collections
import hashlib
import os
import stat
import time

Entry = collections.namedtuple("Entry", "kind mode uid gid size digest mtime target")

KIND_NAMES = {"f": "file", "d": "dir", "l": "symlink", "p": "fifo", "s": "socket",
              "c": "char device", "b": "block device", "?": "unknown"}


class Opts:
    """What a snapshot keeps.

    owners: compare uid/gid; setid: compare the setuid/setgid bits;
    fresh: (lo, hi) in ns: an mtime in it was set by the run ("now"), and
    compares equal to any other such time; inodes: keep inode numbers and
    ctimes too (to prove a tree was not touched at all).
    """

    def __init__(self, owners=True, setid=True, fresh=None, inodes=False):
        self.owners = owners
        self.setid = setid
        self.fresh = fresh
        self.inodes = inodes


def _kind(m):
    for test, k in ((stat.S_ISREG, "f"), (stat.S_ISDIR, "d"), (stat.S_ISLNK, "l"),
                    (stat.S_ISFIFO, "p"), (stat.S_ISSOCK, "s"), (stat.S_ISCHR, "c"),
                    (stat.S_ISBLK, "b")):
        if test(m):
            return k
    return "?"


def _digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


class Snapshot:
    """entries: path (bytes, relative) -> Entry; links: path -> the other
    paths of its hard-link group (a sorted tuple; () for a lone file);
    stamps: path -> (inode, ctime) when opts.inodes."""

    def __init__(self, entries, links, stamps):
        self.entries = entries
        self.links = links
        self.stamps = stamps


def snapshot(root, opts=None):
    """Read the tree below root (root itself is not an entry; a missing root
    is an empty snapshot)."""
    opts = opts or Opts()
    root = os.fsencode(root)
    entries, stamps, by_ino = {}, {}, collections.defaultdict(list)
    if not os.path.lexists(root):
        return Snapshot(entries, {}, stamps)
    todo = [b""]
    while todo:
        rel = todo.pop()
        try:
            names = os.listdir(os.path.join(root, rel) if rel else root)
        except OSError as e:
            entries[rel + b"/\0error"] = Entry("?", 0, 0, 0, 0, str(e), 0, None)
            continue
        for name in names:
            p = os.path.join(rel, name) if rel else name
            full = os.path.join(root, p)
            st = os.lstat(full)
            k = _kind(st.st_mode)
            mode = stat.S_IMODE(st.st_mode)
            if not opts.setid:
                mode &= ~0o6000
            mtime = st.st_mtime_ns
            if opts.fresh and opts.fresh[0] <= mtime <= opts.fresh[1]:
                mtime = "fresh"
            digest = target = None
            if k == "f":
                digest = _digest(full)
                by_ino[(st.st_dev, st.st_ino)].append(p)
            elif k == "l":
                target = os.readlink(full)
                mode = None
            elif k == "d":
                todo.append(p)
            uid, gid = (st.st_uid, st.st_gid) if opts.owners else (None, None)
            entries[p] = Entry(k, mode, uid, gid, st.st_size if k == "f" else None, digest,
                               mtime, target)
            if opts.inodes:
                stamps[p] = (st.st_ino, st.st_ctime_ns)
    links = {}
    for group in by_ino.values():
        for p in group:
            links[p] = tuple(sorted(q for q in group if q != p))
    return Snapshot(entries, links, stamps)


def show(p, long=48):
    """A path as one printable line (escapes as Python would write them);
    a name longer than long bytes is shortened to its start and length."""
    if isinstance(p, bytes):
        p = b"/".join(c if len(c) <= long else c[:24] + b"...(%d bytes)" % len(c)
                      for c in p.split(b"/"))
        p = p.decode("utf-8", "backslashreplace")
    out = []
    for ch in p:
        if ch == "\\" or ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out) or "."


def show_time(ns):
    if ns == "fresh":
        return "now (set by the run)"
    s, frac = divmod(ns, 10**9)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(s)) + ".%09d" % frac


def _what(e):
    if e.kind == "f":
        return "file, %d B" % e.size
    if e.kind == "l":
        return "symlink -> %s" % show(e.target)
    return KIND_NAMES.get(e.kind, e.kind)


def diff(a, b, names=("rsync", "rdcp"), prefix=b""):
    """Every difference between snapshots a and b, as lines."""
    na, nb = names
    out = []
    gone = None  # a directory only one side has: what is below it is counted
    paths = sorted(set(a.entries) | set(b.entries))
    for p in paths:
        ea, eb = a.entries.get(p), b.entries.get(p)
        if gone and p.startswith(gone[0] + b"/") and (ea is None) == gone[1]:
            continue
        where = show(prefix + p)
        if ea is None or eb is None:
            e, who = (ea, na) if eb is None else (eb, nb)
            below = ""
            if e.kind == "d":
                gone = (p, ea is None)
                n = sum(1 for q in paths if q.startswith(p + b"/") and
                        (a.entries.get(q) is None) == gone[1])
                below = ", and %d entries below it" % n if n else ""
            out.append("%s: only in %s's tree (%s%s)" % (where, who, _what(e), below))
            continue
        if ea.kind != eb.kind:
            below = ""
            if "d" in (ea.kind, eb.kind):
                gone = (p, eb.kind == "d")
                n = sum(1 for q in paths if q.startswith(p + b"/"))
                below = " (%d entries below it on the %s side)" % (n, nb if gone[1] else na) \
                    if n else ""
            out.append("%s: %s in %s's tree, %s in %s's%s" % (where, _what(ea), na, _what(eb), nb,
                                                               below))
            continue
        d = []
        if ea.kind == "f" and (ea.size, ea.digest) != (eb.size, eb.digest):
            if ea.size != eb.size:
                d.append("size %d vs %d" % (ea.size, eb.size))
            else:
                d.append("bytes differ (same size %d)" % ea.size)
        if ea.target != eb.target:
            d.append("target %s vs %s" % (show(ea.target), show(eb.target)))
        if ea.mode != eb.mode:
            d.append("mode %04o vs %04o" % (ea.mode, eb.mode))
        if (ea.uid, ea.gid) != (eb.uid, eb.gid):
            d.append("owner %s:%s vs %s:%s" % (ea.uid, ea.gid, eb.uid, eb.gid))
        if ea.mtime != eb.mtime:
            d.append("mtime %s vs %s" % (show_time(ea.mtime), show_time(eb.mtime)))
        la, lb = a.links.get(p, ()), b.links.get(p, ())
        if la != lb:
            d.append("hard-linked with [%s] vs [%s]" % (", ".join(show(prefix + q) for q in la),
                                                     ", ".join(show(prefix + q) for q in lb)))
        sa, sb = a.stamps.get(p), b.stamps.get(p)
        if sa and sb and sa != sb:
            d.append("touched (inode %d ctime %s vs inode %d ctime %s)" % (
                sa[0], show_time(sa[1]), sb[0], show_time(sb[1])))
        if d:
            out.append("%s (%s): %s" % (where, KIND_NAMES.get(ea.kind), "; ".join(d)))
    return out


def item_diff(a, b, run):
    """The -i lines (sorted lists of bytes) only one side printed."""
    out = []
    sa, sb = set(a), set(b)
    miss = [x for x in a if x not in sb]
    extra = [x for x in b if x not in sa]
    if miss or extra:
        out.append("itemized changes%s: %d from rsync, %d from rdcp, %d only rsync's, "
                   "%d only rdcp's:" % (run, len(a), len(b), len(miss), len(extra)))
        out += ["  rsync only: " + show(x) for x in miss]
        out += ["  rdcp only:  " + show(x) for x in extra]
    return out
