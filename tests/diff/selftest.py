"""The harness must be able to fail: plant differences and see each caught.

1. The comparator: two copies of one generated tree compare equal; each
   planted change (a byte, a mode bit, 1 ns of a file's or a directory's
   mtime, a symlink target, a hard link, an extra or a missing entry, a type,
   an owner) is reported, naming its path.
2. End to end, through the runner and a real rdcp: a supported case whose
   oracle gets a wrong option, one whose oracle fails (exit status), one
   whose destination is changed after rdcp ran, and a cross-check whose tree
   is touched after rdcp: each must fail. The same case unplanted must pass.
3. The itemize comparison reports a line only one side printed.
"""

import copy
import os
import shutil

import cases
import compare
import gen

SEED = 7


def _files(root):
    out = []
    for d, _, names in os.walk(root):
        for n in sorted(names):
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                out.append(p)
    return sorted(out)


def _keep_times(p, fn):
    st = os.lstat(p)
    fn()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def _flip_byte(root):
    p = next(f for f in _files(root) if os.path.getsize(f) > 0)

    def go():
        with open(p, "r+b") as fh:
            b = fh.read(1)
            fh.seek(0)
            fh.write(bytes([b[0] ^ 1]))
    _keep_times(p, go)
    return p


def _chmod(root):
    p = _files(root)[0]
    os.chmod(p, os.stat(p).st_mode ^ 0o010)
    return p


def _mtime_file(root):
    p = _files(root)[0]
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    return p


def _mtime_file_1s(root):
    """rsync's quick check compares whole seconds (3.5.0, even with ns on
    both sides): a cross-check sees a second, not a nanosecond."""
    p = _files(root)[0]
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    return p


def _mtime_dir(root):
    p = os.path.join(root, os.fsdecode(gen.PLAIN_DIR))
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    return p


def _retarget(root):
    for d, dirs, names in os.walk(root):
        for n in sorted(names + dirs):
            p = os.path.join(d, n)
            if os.path.islink(p):
                st = os.lstat(p)
                t = os.readlink(p)
                os.unlink(p)
                os.symlink(t + "x", p)
                os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
                return p
    raise RuntimeError("no symlink in the tree")


def _hardlink(root):
    fs = _files(root)
    a = fs[0]
    b = next(f for f in fs if os.stat(f).st_ino != os.stat(a).st_ino)
    parent = os.path.dirname(b)
    _keep_times(parent, lambda: (os.unlink(b), os.link(a, b)))
    return b


def _extra(root):
    p = os.path.join(root, "planted-extra")
    with open(p, "wb") as fh:
        fh.write(b"x")
    return p


def _missing(root):
    p = os.path.join(root, os.fsdecode(gen.PLAIN_FILE))
    _keep_times(root, lambda: os.unlink(p))
    return p


def _type(root):
    p = os.path.join(root, os.fsdecode(gen.PLAIN_FILE))
    _keep_times(root, lambda: (os.unlink(p), os.mkdir(p)))
    return p


def _owner(root):
    p = _files(root)[0]
    st = os.stat(p)
    os.chown(p, st.st_uid + 1, st.st_gid)
    return p


PLANTS = [("one byte of a file", _flip_byte), ("a mode bit", _chmod),
          ("1 ns of a file's mtime", _mtime_file), ("1 ns of a directory's mtime", _mtime_dir),
          ("a symlink's target", _retarget), ("a hard link", _hardlink),
          ("an extra file", _extra), ("a missing file", _missing),
          ("a file turned into a directory", _type)]


def comparator(base, log):
    ok = True
    spec = gen.gen_source(SEED)
    a, b = os.path.join(base, "a"), os.path.join(base, "b")
    gen.make_sandbox(base)
    gen.materialize(spec, a, base)
    plants = PLANTS + ([("an owner", _owner)] if os.geteuid() == 0 else [])
    for what, plant in [("nothing", None)] + plants:
        if os.path.exists(b):
            shutil.rmtree(b)
        gen.materialize(spec, b, base)
        where = plant(b) if plant else None
        d = compare.diff(compare.snapshot(a), compare.snapshot(b))
        rel = os.path.relpath(where, b) if where else None
        if plant is None:
            good = not d
        else:
            good = any(x.startswith(compare.show(os.fsencode(rel))) for x in d)
        log("selftest: comparator, planted %s%s: %s" % (
            what, " at %s" % compare.show(os.fsencode(rel)) if rel else "", "caught" if plant and good else
            ("no difference" if good else "MISSED" if plant else "FALSE DIFFERENCE")))
        if not good:
            ok = False
            log("\n".join("    " + x for x in d[:10]))
    shutil.rmtree(base)
    return ok


class _Planted:
    """Wraps an Instance's tool(): after rdcp ran on a side, call plant."""

    def __init__(self, inst, plant):
        self.inst, self.plant = inst, plant
        self.orig = inst.tool
        inst.tool = self.tool

    def tool(self, side, extra=()):
        r = self.orig(side, extra)
        if side != "rsync" and self.plant:
            self.plant(os.path.join(self.inst.side(side), "dst"))
        return r


def end_to_end(env, Instance, log):
    ok = True
    mode = "pull"
    base = cases.CASES["dir.empty-dst-into"]
    xbase = cases.CASES["xcheck.rsync-after-rdcp-new"]

    def variant(c, **kw):
        v = copy.copy(c)
        for k, val in kw.items():
            setattr(v, k, val)
        return v

    trials = [
        ("unplanted (must pass)", base, None, False),
        ("oracle given --exclude=plain.txt", variant(
            base, rsync_opts=base.rsync_opts + ["--exclude=" + os.fsdecode(gen.PLAIN_FILE)]),
         None, True),
        ("oracle exits 1 (an option it does not know)", variant(
            base, rsync_opts=base.rsync_opts + ["--no-such-option-planted"]), None, True),
        ("a byte of rdcp's destination changed", base, _flip_byte, True),
        ("1 ns of a directory of rdcp's destination", base,
         lambda d: _mtime_dir(os.path.join(d, "src")), True),
        ("cross-check: a file's mtime moved 1 s before rsync -ani", xbase, _mtime_file_1s,
         True),
    ]
    for what, c, plant, must_fail in trials:
        inst = Instance(env, c, SEED, [mode])
        inst.dir += ".selftest"
        _Planted(inst, plant)
        inst.run()
        failed = bool(inst.results.get(mode))
        good = failed == must_fail
        log("selftest: end to end (%s, %s), %s: %s" % (
            c.name, mode, what, ("caught" if failed else "passed") if good else
            ("MISSED" if must_fail else "FAILED")))
        if not good:
            ok = False
            log(inst.report(mode))
        shutil.rmtree(inst.dir, ignore_errors=True)
    return ok


def itemize(log):
    d = compare.item_diff([b">f+++++++++ a"], [], "")
    good = bool(d) and not compare.item_diff([b">f+++++++++ a"], [b">f+++++++++ a"], "")
    log("selftest: itemize, a line only rsync printed: %s" % ("caught" if good else "MISSED"))
    return good


def run(env, Instance, log):
    ok = comparator(os.path.join(env.base, "selftest"), log)
    ok = end_to_end(env, Instance, log) and ok
    ok = itemize(log) and ok
    log("selftest: %s" % ("every planted difference was caught" if ok else "FAILED"))
    return ok
