"""Seeded random trees for the differential test against rsync.

A tree is first a *spec*: a dict from a relative path (bytes; b"" is the
root) to a Node. Paths that share one Node object are hard links. The same
spec materialized twice gives two trees that differ only in inode numbers
and ctimes, so the rsync side and each rdcp side start from identical
bytes. Everything comes from the seed: gen_source(seed, feats) and
derive_prior(src, seed, feats) are pure functions of their arguments.

Times are kept away from "now" (2000-2020, or 2040-2050 for destination
files newer than the source) so that a time a tool set to "now" is never
mistaken for one it kept (compare.py calls those "fresh").
"""

import copy
import os
import random

T_PAST = (946684800, 1577836800)  # 2000-01-01 .. 2020-01-01
T_FUTURE = (2208988800, 2524608000)  # 2040-01-01 .. 2050-01-01

# What a tree may contain. A case may leave some out (cases.py says why).
TREE_FEATURES = (
    "odd_names",  # spaces, leading dashes, quotes, $, :, ~, unicode
    "newline_names",  # \n and \r in names
    "nonutf8",  # names that are not UTF-8
    "glob_names",  # * ? [ ] in names
    "long_names",  # 255-byte names
    "symlinks",  # relative links to files and directories
    "abs_symlinks",  # absolute targets
    "dangling",  # targets that do not exist, a self loop
    "hardlinks",  # hard-link groups across directories
    "fifos",  # a named pipe now and then
    "owners",  # other uids/gids (only when run as root)
    "setid",  # setuid/setgid/sticky modes
    "ns_times",  # nanosecond mtimes (else whole seconds)
    "multichunk",  # files over many 4 KiB chunks
    "filter_names",  # *.tmp, *.log, cache/, build/, core, deep/**
    "merge_files",  # .rsync-filter files (-F)
)
# What the prior destination may differ in.
PRIOR_FEATURES = (
    "m_same_stat",  # same size and mtime, other bytes (quick check's blind spot)
    "m_content",  # other bytes, other mtime (same size, one byte, resized)
    "m_newer",  # other bytes and an mtime after the source's
    "m_meta",  # mode, mtime, owner only
    "m_deleted",  # files and subtrees missing
    "m_extra",  # files, directories and links the source does not have
    "m_file_to_dir",  # an empty directory where the source has a file
    "m_file_to_dir_full",  # a directory with a file in it, where the source has a file
    "m_dir_to_file",  # a file where the source has a directory
    "m_file_to_link",  # a symlink where the source has a file
    "m_link_to_file",  # a file where the source has a symlink
    "m_dir_to_link",  # a symlink to outside/ where the source has a directory
    "m_file_to_fifo",  # a fifo where the source has a file
    "m_hl_break",  # a hard-link group of the source split in two
    "m_hl_join",  # two files of the source hard-linked
    "m_retarget",  # a symlink pointing elsewhere
    "m_near",  # other bytes, same size, mtime under 2 s away (--modify-window)
)
ALL_FEATURES = frozenset(TREE_FEATURES + PRIOR_FEATURES)

# The entries every tree has, for cases that name a file or a directory.
PLAIN_FILE = b"plain.txt"
PLAIN_DIR = b"dir1"

FILE_MODES = [(0o644, 8), (0o600, 2), (0o755, 2), (0o640, 1), (0o444, 1), (0o666, 1),
              (0o700, 1), (0o604, 1)]
FILE_SETID = [(0o4755, 1), (0o2750, 1), (0o1644, 1)]
DIR_MODES = [(0o755, 8), (0o700, 1), (0o750, 1), (0o775, 1), (0o555, 1)]
DIR_SETID = [(0o2775, 1), (0o1777, 1)]
OWNERS = [((0, 0), 8), ((65534, 65534), 1), ((1234, 4321), 1), ((0, 100), 1)]

WORDS = [b"alpha", b"data", b"x", b"README", b"Makefile", b"notes", b"img", b"lib", b"a",
         b"b", b"zz", b"report", b"v2", b"Final", b"old", b"new", b"tmpl", b"q"]
EXTS = [b"", b"", b".txt", b".bin", b".dat", b".c", b".h", b".json", b".gz"]
ODD = [b"with space", b" lead", b"trail ", b"-dash", b"--opt=1", b"-", b"tab\tname",
       b".hidden", b"..dots", b"~tilde", b"#hash", b"a:b", b"x::y", b"'q'", b'"dq"', b"$HOME",
       b"%s%n", b"back\\slash", "\u00fcn\u00efc\u00f8d\u00e9 \u6f22".encode(), b"x=y",
       b"semi;colon", b"(paren)", b"{brace}", b"!bang", b"&amp", b".rdcp-partialx",
       b"rsync.tmp~", b"@at"]
# (".rdcp-partialx", not ".rdcp-partial.x": rdcp never sends nor accepts its own
# partials' names, issue 27; this one only looks like one and is copied like any.)
NEWLINE = [b"new\nline", b"\n", b"cr\rx", b"trailing\n"]
NONUTF8 = [b"caf\xe9", b"\xff\xfe", b"\x80bad", b"mixed-\xc3"]
GLOB = [b"star*", b"q?", b"[br]", b"a[!x]b", b"**", b"*", b"?", b"[", b"]x"]


def content(cid, size, flips=()):
    """The bytes of a file: a seeded random stream, with flipped bytes."""
    if size == 0:
        return b""
    data = bytearray(random.Random(cid).randbytes(size))
    for off, x in flips:
        data[off % size] ^= x
    return bytes(data)


class Node:
    """One inode: kind 'f' (file), 'd' (dir), 'l' (symlink), 'p' (fifo).

    data: (cid, size, flips) for files; target: bytes, or ("sandbox", NAME)
    for a link to NAME at the sandbox's top (resolved when materialized).
    """

    def __init__(self, kind, mode, mtime, uid=None, gid=None, data=None, target=None):
        self.kind = kind
        self.mode = mode
        self.mtime = mtime
        self.uid = uid
        self.gid = gid
        self.data = data
        self.target = target

    def size(self):
        if self.kind != "f":
            return 0
        return len(self.data[1]) if self.data[0] == "literal" else self.data[1]


def _weighted(rng, pairs):
    total = sum(w for _, w in pairs)
    r = rng.uniform(0, total)
    for v, w in pairs:
        r -= w
        if r <= 0:
            return v
    return pairs[-1][0]


def _parent(p):
    return p.rsplit(b"/", 1)[0] if b"/" in p else b""


def _join(d, name):
    return d + b"/" + name if d else name


def _relpath(target, from_dir):
    """target (tree-relative) as seen from directory from_dir."""
    return os.path.relpath(target or b".", from_dir or b".")


class _Gen:
    def __init__(self, rng, feats, tag):
        self.rng = rng
        self.f = feats
        self.tag = tag
        self.ncid = 0
        self.root = os.geteuid() == 0

    def on(self, feat):
        return feat in self.f

    def cid(self):
        self.ncid += 1
        return "%s/%d" % (self.tag, self.ncid)

    def mtime(self, future=False):
        lo, hi = T_FUTURE if future else T_PAST
        s = self.rng.randint(lo, hi)
        if not self.on("ns_times"):
            return s * 10**9
        ns = self.rng.choice([0, 0, 500000000, 1, 999999999] + [self.rng.randint(0, 10**9 - 1)] * 5)
        return s * 10**9 + ns

    def owner(self):
        if not (self.root and self.on("owners")):
            return None, None
        return _weighted(self.rng, OWNERS)

    def file_mode(self):
        pairs = FILE_MODES + (FILE_SETID if self.on("setid") else [])
        return _weighted(self.rng, pairs)

    def dir_mode(self):
        pairs = DIR_MODES + (DIR_SETID if self.on("setid") else [])
        return _weighted(self.rng, pairs)

    def size(self):
        r = self.rng.random()
        if r < 0.15:
            return 0
        if r < 0.55:
            return self.rng.randint(1, 2000)
        if r < 0.80:
            return self.rng.randint(2001, 12000)
        if r < 0.90:
            return 4096 * self.rng.randint(1, 5)
        if self.on("multichunk"):
            return self.rng.randint(12001, 70000)
        return self.rng.randint(1, 4000)

    def file(self, size=None):
        uid, gid = self.owner()
        size = self.size() if size is None else size
        return Node("f", self.file_mode(), self.mtime(), uid, gid, (self.cid(), size, ()))

    def dir(self):
        uid, gid = self.owner()
        return Node("d", self.dir_mode(), self.mtime(), uid, gid)

    def link(self, target):
        uid, gid = self.owner()
        return Node("l", 0o777, self.mtime(), uid, gid, target=target)

    def name(self, used):
        for _ in range(100):
            pool = []
            if self.on("odd_names"):
                pool += [ODD]
            if self.on("newline_names"):
                pool += [NEWLINE]
            if self.on("nonutf8"):
                pool += [NONUTF8]
            if self.on("glob_names"):
                pool += [GLOB]
            r = self.rng.random()
            if pool and r < 0.25:
                n = self.rng.choice(self.rng.choice(pool))
            elif self.on("long_names") and r < 0.28:
                n = (b"L%d-" % self.rng.randint(0, 99)).ljust(self.rng.choice([200, 254, 255]), b"n")
            else:
                n = self.rng.choice(WORDS) + (b"%d" % self.rng.randint(0, 99)
                                              if self.rng.random() < 0.6 else b"")
                n += self.rng.choice(EXTS)
            if n not in used and n not in (b".", b"..") and b"/" not in n and b"\0" not in n:
                used.add(n)
                return n
        raise RuntimeError("no free name")


class Spec(dict):
    """path -> Node; plus the children names per directory for new names."""

    def names_in(self, d):
        pre = d + b"/" if d else b""
        return {p[len(pre):] for p in self if p and p.startswith(pre) and b"/" not in p[len(pre):]}

    def dirs(self):
        return sorted(p for p, n in self.items() if n.kind == "d")

    def files(self):
        return sorted(p for p, n in self.items() if n.kind == "f")

    def kind(self, k):
        return sorted(p for p, n in self.items() if n.kind == k)

    def remove_tree(self, p):
        for q in [q for q in self if q == p or q.startswith(p + b"/")]:
            del self[q]

    def clone(self):
        return copy.deepcopy(self)


def gen_source(seed, feats=ALL_FEATURES):
    """The source tree of a seed."""
    g = _Gen(random.Random("src/%d" % seed), feats, "src%d" % seed)
    rng = g.rng
    s = Spec()
    s[b""] = g.dir()
    s[b""].mode = rng.choice([0o755, 0o750, 0o775])
    used = {b"": set()}

    def new_name(d):
        return g.name(used.setdefault(d, s.names_in(d)))

    def add(d, name, node):
        used.setdefault(d, s.names_in(d)).add(name)
        p = _join(d, name)
        s[p] = node
        if node.kind == "d":
            used[p] = set()
        return p

    add(b"", PLAIN_FILE, g.file(rng.randint(1, 3000)))
    add(b"", PLAIN_DIR, g.dir())
    for _ in range(rng.randint(4, 10)):
        parent = rng.choice([d for d in s.dirs() if d.count(b"/") < 4])
        add(parent, new_name(parent), g.dir())
    dirs = s.dirs()
    for _ in range(rng.randint(15, 45)):
        d = rng.choice(dirs)
        add(d, new_name(d), g.file())
    add(PLAIN_DIR, new_name(PLAIN_DIR), g.file())
    if g.on("multichunk") and rng.random() < 0.3:
        d = rng.choice(dirs)
        add(d, new_name(d), g.file(rng.randint(200000, 300000)))
    if g.on("filter_names"):
        for d in rng.sample(dirs, min(3, len(dirs))):
            for n in (b"a.tmp", b"debug.log", b"keep.log", b"core", b"x.o"):
                if rng.random() < 0.6 and n not in used[d]:
                    add(d, n, g.file(rng.randint(0, 500)))
        for n in (b"cache", b"build"):
            d = rng.choice(dirs)
            if n not in used[d]:
                c = add(d, n, g.dir())
                add(c, b"inner.dat", g.file(rng.randint(1, 300)))
                if rng.random() < 0.5:
                    add(add(c, b"sub", g.dir()), b"deeper.dat", g.file(5))
        if b"deep" not in used[b""]:
            p = add(b"", b"deep", g.dir())
            for n in (b"x", b"y"):
                p = add(p, n, g.dir())
            add(p, b"z.dat", g.file(rng.randint(1, 100)))
            add(p, b"z.tmp", g.file(3))
        if b"top.txt" not in used[b""]:
            add(b"", b"top.txt", g.file(rng.randint(1, 50)))
    if g.on("merge_files"):
        rules = [b"- *.tmp\n", b"+ keep.log\n- *.log\n", b"- cache/\n", b"- core\n",
                 b"- /top.txt\n", b"+ */\n+ *.dat\n- *.o\n"]
        for d in [b""] + rng.sample(dirs, min(2, len(dirs))):
            if b".rsync-filter" not in used[d]:
                n = g.file()
                body = b"".join(rng.sample(rules, rng.randint(1, 3)))
                n.data = ("literal", body)
                add(d, b".rsync-filter", n)
    files = s.files()
    if g.on("symlinks"):
        for _ in range(rng.randint(2, 5)):
            d = rng.choice(dirs)
            # no link to an ancestor: -L must not copy a loop forever
            t = rng.choice(files + [x for x in dirs if x and not (d + b"/").startswith(x + b"/")])
            add(d, new_name(d), g.link(_relpath(t, d)))
    if g.on("abs_symlinks"):
        d = rng.choice(dirs)
        add(d, new_name(d), g.link(rng.choice([b"/etc/hostname", b"/nonexistent/abs", b"/"])))
    if g.on("dangling"):
        d = rng.choice(dirs)
        add(d, new_name(d), g.link(rng.choice([b"missing/target", b"../../../../../../out",
                                               b"sp ace\nnl"])))
        if rng.random() < 0.3:
            d = rng.choice(dirs)
            n = new_name(d)
            add(d, n, g.link(n))
    if g.on("hardlinks"):
        cand = [p for p in files if not s[p].data[0] == "literal"]
        for p in rng.sample(cand, min(len(cand), rng.randint(1, 3))):
            for _ in range(rng.randint(1, 2)):
                d = rng.choice(dirs)
                add(d, new_name(d), s[p])
    if g.on("fifos") and rng.random() < 0.3:
        d = rng.choice(dirs)
        uid, gid = g.owner()
        add(d, new_name(d), Node("p", 0o644, g.mtime(), uid, gid))
    return s


def derive_prior(src, seed, feats=ALL_FEATURES, tag="dst"):
    """A destination left by an earlier copy of src, then changed: seeded
    mutations of the kinds feats allows (PRIOR_FEATURES)."""
    g = _Gen(random.Random("%s/%d" % (tag, seed)), feats, "%s%d" % (tag, seed))
    rng = g.rng
    d = src.clone()
    kinds = [k for k in PRIOR_FEATURES if k in feats]
    if not kinds:
        return d
    for _ in range(rng.randint(6, 16)):
        _mutate(d, g, rng.choice(kinds))
    return d


def _pick(rng, paths):
    return rng.choice(paths) if paths else None


def _mutate(d, g, kind):
    rng = g.rng
    files = [p for p in d.files() if d[p].data[0] != "literal"]
    dirs = [p for p in d.dirs() if p]
    nonroot = [p for p in d if p]
    if kind == "m_same_stat":
        p = _pick(rng, [f for f in files if d[f].size()])
        if p:
            n = d[p]
            n.data = (g.cid(), n.size(), ())
    elif kind == "m_content":
        p = _pick(rng, [f for f in files if d[f].size()])
        if not p:
            return
        n = d[p]
        how = rng.choice(["same_size", "flip", "resize"])
        if how == "same_size":
            n.data = (g.cid(), n.size(), ())
        elif how == "flip":
            n.data = (n.data[0], n.size(), n.data[2] + ((rng.randint(0, n.size() - 1), 0x5A),))
        else:
            n.data = (n.data[0], max(0, n.size() + rng.choice([-1, 1, 4096, -n.size()])), ())
        n.mtime = g.mtime()
    elif kind == "m_near":
        p = _pick(rng, [f for f in files if d[f].size()])
        if p:
            n = d[p]
            n.data = (g.cid(), n.size(), ())
            n.mtime += rng.choice([-1, 1]) * rng.randint(10**8, 19 * 10**8)
    elif kind == "m_newer":
        p = _pick(rng, files)
        if p:
            n = d[p]
            n.data = (g.cid(), rng.choice([n.size(), n.size() + 3]), ())
            n.mtime = g.mtime(future=True)
    elif kind == "m_meta":
        p = _pick(rng, nonroot + [b""])
        n = d[p]
        if n.kind == "l":
            n.mtime = g.mtime()
            return
        what = rng.choice(["mode", "mtime", "owner"])
        if what == "mode":
            n.mode = g.dir_mode() if n.kind == "d" else g.file_mode()
        elif what == "owner" and g.root and g.on("owners"):
            n.uid, n.gid = _weighted(rng, OWNERS)
        else:
            n.mtime = g.mtime()
    elif kind == "m_deleted":
        p = _pick(rng, nonroot)
        if p and p not in (PLAIN_FILE, PLAIN_DIR):
            d.remove_tree(p)
    elif kind == "m_extra":
        parent = _pick(rng, dirs + [b""])
        used = d.names_in(parent)
        planted = [n for n in (b"extra.log", b"extra.tmp", b"cache") if n not in used]
        if g.on("filter_names") and planted and rng.random() < 0.4:
            p = _join(parent, rng.choice(planted))
        else:
            p = _join(parent, g.name(used))
        what = rng.choice(["file", "file", "dir", "link"])
        if what == "file":
            d[p] = g.file()
        elif what == "link":
            d[p] = g.link(rng.choice([b"extra-target", b"../x"]))
        else:
            d[p] = g.dir()
            for _ in range(rng.randint(0, 3)):
                d[_join(p, g.name(d.names_in(p)))] = g.file()
            if rng.random() < 0.4:
                q = _join(p, b"subdir")
                d[q] = g.dir()
                d[_join(q, b"f")] = g.file()
    elif kind.startswith("m_file_to_"):
        p = _pick(rng, [f for f in files if f != PLAIN_FILE])
        if not p:
            return
        if kind == "m_file_to_dir":
            d[p] = g.dir()
        elif kind == "m_file_to_dir_full":
            d[p] = g.dir()
            d[_join(p, b"inside")] = g.file()
        elif kind == "m_file_to_link":
            d[p] = g.link(b"somewhere")
        else:
            d[p] = Node("p", 0o644, g.mtime())
    elif kind == "m_dir_to_file":
        p = _pick(rng, [x for x in dirs if x != PLAIN_DIR])
        if p:
            d.remove_tree(p)
            d[p] = g.file()
    elif kind == "m_link_to_file":
        p = _pick(rng, d.kind("l"))
        if p:
            d[p] = g.file()
    elif kind == "m_dir_to_link":
        p = _pick(rng, [x for x in dirs if x != PLAIN_DIR])
        if p:
            d.remove_tree(p)
            d[p] = g.link(("sandbox", b"outside"))
    elif kind == "m_hl_break":
        groups = {}
        for p in files:
            groups.setdefault(id(d[p]), []).append(p)
        multi = [v for v in groups.values() if len(v) > 1]
        if multi:
            grp = rng.choice(multi)
            d[grp[-1]] = copy.copy(d[grp[-1]])
    elif kind == "m_hl_join":
        if len(files) >= 2:
            a, b = rng.sample(files, 2)
            d[b] = d[a]
    elif kind == "m_retarget":
        if d.kind("l"):
            p = rng.choice(d.kind("l"))
            d[p] = copy.copy(d[p])
            d[p].target = rng.choice([b"retargeted", b"../elsewhere", PLAIN_FILE])


def materialize(spec, root, sandbox):
    """Make spec's tree at root (which must not exist); sandbox is the
    directory ("sandbox", NAME) link targets point into."""
    root, sandbox = os.fsencode(root), os.fsencode(sandbox)
    nodes = sorted(spec.items(), key=lambda kv: kv[0])
    made = {}
    for p, n in nodes:
        path = os.path.join(root, p) if p else root
        if n.kind == "d":
            os.mkdir(path, 0o700)
    for p, n in nodes:
        path = os.path.join(root, p)
        if n.kind == "f":
            if id(n) in made:
                os.link(made[id(n)], path)
                continue
            made[id(n)] = path
            with open(path, "wb") as fh:
                fh.write(file_bytes(n))
        elif n.kind == "l":
            t = n.target
            if isinstance(t, tuple):
                t = os.path.relpath(os.path.join(sandbox, t[1]), os.path.dirname(path))
            os.symlink(t, path)
        elif n.kind == "p":
            os.mkfifo(path, 0o600)
    if os.geteuid() == 0:
        for p, n in nodes:
            if n.uid is not None:
                os.chown(os.path.join(root, p) if p else root, n.uid, n.gid, follow_symlinks=False)
    for p, n in nodes:
        if n.kind in "fp":
            path = os.path.join(root, p)
            os.chmod(path, n.mode)
            os.utime(path, ns=(n.mtime, n.mtime), follow_symlinks=False)
        elif n.kind == "l":
            os.utime(os.path.join(root, p), ns=(n.mtime, n.mtime), follow_symlinks=False)
    for p, n in sorted(nodes, key=lambda kv: -kv[0].count(b"/") - (1 if kv[0] else 0)):
        if n.kind == "d":
            path = os.path.join(root, p) if p else root
            os.chmod(path, n.mode)
            os.utime(path, ns=(n.mtime, n.mtime))


def file_bytes(n):
    if n.data[0] == "literal":
        return n.data[1]
    return content(*n.data)


def single_dir(seed, tag, feats=ALL_FEATURES):
    """An empty directory's node (a destination that exists)."""
    g = _Gen(random.Random("%s/%d" % (tag, seed)), feats, tag)
    n = g.dir()
    n.mode = 0o755
    return n


def describe(spec):
    """Counts by kind, for the log."""
    kinds = {}
    for n in spec.values():
        kinds[n.kind] = kinds.get(n.kind, 0) + 1
    size = sum(n.size() for n in {id(n): n for n in spec.values()}.values())
    return "%d dirs, %d files, %d links, %d fifos, %d bytes" % (
        kinds.get("d", 0), kinds.get("f", 0), kinds.get("l", 0), kinds.get("p", 0), size)


def make_sandbox(side):
    """A side's top directory with outside/: a directory beside the trees
    that nothing may write into (a destination link may point at it)."""
    out = os.path.join(os.fsencode(side), b"outside")
    os.makedirs(out)
    canary = os.path.join(out, b"canary")
    with open(canary, "wb") as fh:
        fh.write(b"nothing may write here\n")
    for p in (canary, out):
        os.utime(p, ns=(T_PAST[0] * 10**9, T_PAST[0] * 10**9))
