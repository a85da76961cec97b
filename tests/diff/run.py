#!/usr/bin/env python3
"""The differential test of rdcp against rsync (issues 28 and 29).

For each case (cases.py) and seed it generates a source tree and a prior
destination (gen.py), makes one copy of them for rsync and one per rdcp
mode, runs `rsync OPTS SRC DST` locally as the oracle and rdcp with the same
options to a daemon (push, pull), over ssh (ssh-push, ssh-pull) or locally,
and compares the sides (compare.py): trees, exit status (zero or not),
itemized changes. Every failure prints its seed and the command line that
reproduces it. Run with --help for the options; tests/diff/README.md has
the rest.
"""

import argparse
import concurrent.futures
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
import compare  # noqa: E402
import gen  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ITEM_RE = re.compile(rb"^([<>ch.*][fdLDS][.+?a-zA-Z ]{9}|\*deleting  ) (.*)$")
DAEMON_MODES = ("push", "pull")
SSH_MODES = ("ssh-push", "ssh-pull")


def log(*a):
    print(*a, flush=True)


def run_cmd(cmd, cwd, timeout, env):
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, env=env)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or b"", (e.stderr or b"") + b"\n[killed: timeout]"
    return Ran(cmd, rc, out, err, time.monotonic() - t)


class Ran:
    def __init__(self, cmd, rc, out, err, secs):
        self.cmd, self.rc, self.out, self.err, self.secs = cmd, rc, out, err, secs

    def line(self):
        return " ".join(shlex.quote(c) for c in self.cmd)

    def items(self):
        """The -i lines of stdout, sorted."""
        return sorted(m.group(0) for m in map(ITEM_RE.match, self.out.splitlines()) if m)

    def ok(self):
        return self.rc == 0


class Env:
    """Binaries, the daemon, sshd, the work directory."""

    def __init__(self, args):
        self.a = args
        self.rdcp = os.path.abspath(args.rdcp)
        self.rdcpd = os.path.abspath(args.rdcpd)
        self.base = tempfile.mkdtemp(prefix="rdcp-diff.", dir=args.workdir)
        self.mod = os.path.join(self.base, "m")
        os.mkdir(self.mod)
        self.env = dict(os.environ, LC_ALL="C")
        self.env.pop("RDCP_PASSWORD", None)
        self.daemon = None
        self.port = None
        self.sshd_pid = None
        self.ssh = None
        self.root = os.geteuid() == 0

    # -- the daemon ---------------------------------------------------------
    def start_daemon(self):
        ready = os.path.join(self.base, "rdcpd.ready")
        logf = open(os.path.join(self.base, "rdcpd.log"), "wb")
        cmd = [self.rdcpd, "--foreground", "--no-auth", "--module", "m=" + self.mod + ",delete",
               "--listen", self.a.host, "--port", "0", "--ready-file", ready]
        if self.a.transport != "auto":
            cmd += ["--transport", self.a.transport]
        self.daemon = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)
        for _ in range(200):
            if os.path.exists(ready) and open(ready).read().strip():
                self.port = open(ready).read().strip()
                return
            if self.daemon.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit("rdcpd did not start: %s" % self.daemon_log())

    def daemon_log(self):
        with open(os.path.join(self.base, "rdcpd.log"), "rb") as fh:
            return fh.read().decode(errors="replace")[-2000:]

    def daemon_alive(self):
        return self.daemon is None or self.daemon.poll() is None

    # -- sshd on a free port, a throwaway host key and client key ----------
    def start_sshd(self):
        d = os.path.join(self.base, "ssh")
        os.mkdir(d, 0o700)
        for k in ("hostkey", "key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            os.path.join(d, k)], check=True)
        shutil.copy(os.path.join(d, "key.pub"), os.path.join(d, "authorized_keys"))
        os.chmod(os.path.join(d, "authorized_keys"), 0o600)
        open(os.path.join(d, "sshd_config"), "w").close()
        if self.root:
            os.makedirs("/run/sshd", 0o755, exist_ok=True)
        s = socket.socket()
        s.bind((self.a.host, 0))
        port = s.getsockname()[1]
        s.close()
        pidf = os.path.join(d, "sshd.pid")
        subprocess.run(["/usr/sbin/sshd", "-f", os.path.join(d, "sshd_config"),
                        "-E", os.path.join(d, "sshd.log"), "-p", str(port),
                        "-o", "ListenAddress=" + self.a.host,
                        "-h", os.path.join(d, "hostkey"), "-o", "StrictModes=no",
                        "-o", "PermitRootLogin=prohibit-password",
                        "-o", "PasswordAuthentication=no", "-o", "KbdInteractiveAuthentication=no",
                        "-o", "UsePAM=no", "-o", "PubkeyAuthentication=yes",
                        "-o", "AuthorizedKeysFile=" + os.path.join(d, "authorized_keys"),
                        "-o", "PidFile=" + pidf], check=True)
        ssh = ["ssh", "-p", str(port), "-i", os.path.join(d, "key"),
               "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
               "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-o", "ConnectTimeout=20"]
        if self.a.ssh_mux:
            ssh += ["-o", "ControlMaster=auto", "-o", "ControlPath=" + os.path.join(d, "cm.%C"),
                    "-o", "ControlPersist=900"]
        self.ssh = " ".join(shlex.quote(x) for x in ssh)
        for _ in range(100):
            if os.path.exists(pidf) and open(pidf).read().strip():
                self.sshd_pid = int(open(pidf).read())
                break
            time.sleep(0.05)
        last = None
        for _ in range(50):
            last = subprocess.run(ssh + [self.a.host, "true"], stdin=subprocess.DEVNULL,
                                  capture_output=True)
            if last.returncode == 0:
                return
            time.sleep(0.2)
        raise SystemExit("sshd on port %d does not let us in: %s" % (
            port, last.stderr.decode(errors="replace")))

    def stop(self):
        if self.ssh and self.a.ssh_mux:
            subprocess.run(shlex.split(self.ssh) + ["-O", "exit", self.a.host],
                           capture_output=True)
        if self.sshd_pid:
            try:
                os.kill(self.sshd_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if self.daemon and self.daemon.poll() is None:
            self.daemon.terminate()
            self.daemon.wait()

    # -- rdcp command lines per mode ---------------------------------------
    def rdcp_cmd(self, mode, opts, srcs, dst, side):
        cmd = [self.rdcp] + self.a.rdcp_opt
        if self.a.transport != "auto" and mode != "local":
            cmd += ["--transport", self.a.transport]
        rel = os.path.relpath(side, self.mod)
        h = self.a.host
        if mode in DAEMON_MODES:
            cmd += ["--port", self.port]
        elif mode in SSH_MODES:
            cmd += ["-e", self.ssh, "--remote-rdcp", self.rdcp]
        cmd += opts
        if mode == "push":
            dst = "%s::m/%s/%s" % (h, rel, dst)
        elif mode == "pull":
            srcs = ["%s::m/%s/%s" % (h, rel, s) for s in srcs]
        elif mode == "ssh-push":
            dst = "%s:%s/%s" % (h, side, dst)
        elif mode == "ssh-pull":
            srcs = ["%s:%s/%s" % (h, side, s) for s in srcs]
        return cmd + srcs + [dst]


def expand(args, lists):
    return [a.replace("{file}", os.fsdecode(gen.PLAIN_FILE))
            .replace("{dir}", os.fsdecode(gen.PLAIN_DIR)).replace("{lists}", lists) for a in args]


class Instance:
    """One case with one seed: the rsync side and one side per mode."""

    def __init__(self, env, case, seed, modes):
        self.e, self.c, self.seed, self.modes = env, case, seed, modes
        self.dir = os.path.join(env.mod, case.name, str(seed))
        self.results = {}  # mode -> list of problem lines ([] = pass)
        self.ran = {}  # side -> [Ran]
        self.notes = {}

    @property
    def lists(self):
        return os.path.join(self.dir, "lists")

    def side(self, name):
        return os.path.join(self.dir, name)

    def build(self):
        c, seed = self.c, self.seed
        src = self.full_src = gen.gen_source(seed, c.feats)
        if c.empty_src:
            src = gen.Spec({b"": src[b""]})
        prior = gen.derive_prior(src, seed, c.feats) if c.prior != "none" else None
        if prior is not None and c.dst_edit:
            c.dst_edit(prior, src, random.Random("dst/%d" % seed))
        refs = {r: gen.derive_prior(src, seed, c.feats & {"m_content", "m_meta", "m_deleted"},
                                    tag=r) for r in c.refs}
        os.makedirs(self.lists)
        rng = random.Random("lists/%d" % seed)
        for name, fn in sorted(c.lists.items()):
            with open(os.path.join(self.lists, name), "wb") as fh:
                fh.write(fn(src, rng))
        for s in ["rsync"] + list(self.modes):
            sd = self.side(s)
            gen.make_sandbox(sd)
            gen.materialize(src, os.path.join(sd, "src"), sd)
            for r, spec in refs.items():
                gen.materialize(spec, os.path.join(sd, r), sd)
            dst = os.path.join(sd, "dst")
            if c.prior == "mirror":
                gen.materialize(prior, dst, sd)
            elif c.prior in ("nested", "empty"):
                top = gen.Spec({b"": gen.single_dir(seed, "dsttop")})
                if c.prior == "nested":
                    for p, n in prior.items():
                        top[b"src/" + p if p else b"src"] = n
                gen.materialize(top, dst, sd)
        return src

    # the commands of each side
    def rsync(self, opts, sd):
        return run_cmd(["rsync"] + opts + self.operands()[0] + [self.operands()[1]], sd,
                       self.e.a.timeout, self.e.env)

    def operands(self):
        return expand(self.c.srcs, self.lists), expand([self.c.dst], self.lists)[0]

    def rdcp(self, mode, opts, sd):
        srcs, dst = self.operands()
        return run_cmd(self.e.rdcp_cmd(mode, opts, srcs, dst, sd), sd, self.e.a.timeout,
                       self.e.env)

    def tool(self, side, extra=()):
        sd = self.side(side)
        if side == "rsync":
            return self.rsync(expand(self.c.rsync_opts, self.lists) + list(extra), sd)
        return self.rdcp(side, expand(self.c.opts, self.lists) + list(extra), sd)

    def snap_opts(self, mode, fresh=None, inodes=False):
        daemon_push = mode == "push"
        return compare.Opts(owners=self.e.root and not daemon_push, setid=not daemon_push,
                            fresh=fresh, inodes=inodes)

    def run(self):
        t0 = time.time_ns()
        self.build()
        check = getattr(self, "check_" + ("refused" if self.c.expect == "refuse"
                                            else self.c.check))
        check(t0)
        return self

    # -- check "trees": both tools, then compare everything ----------------
    def check_trees(self, t0):
        self.ran["rsync"] = [self.tool("rsync") for _ in range(self.c.runs)]
        for m in self.modes:
            self.ran[m] = [self.tool(m) for _ in range(self.c.runs)]
        for m in self.modes:
            self.results[m] = self.compare_sides(m, t0, self.ran["rsync"], self.ran[m])

    def compare_sides(self, m, t0, a, b):
        """What differs between the rsync side after runs a and side m after
        runs b: exit statuses, itemized changes, trees."""
        probs = []
        fresh = (t0 - 10**9, time.time_ns() + 10**9)
        sa = compare.snapshot(self.side("rsync"), self.snap_opts(m, fresh))
        sb = compare.snapshot(self.side(m), self.snap_opts(m, fresh))
        for i, (ra, rb) in enumerate(zip(a, b)):
            run = " (run %d)" % (i + 1) if len(a) > 1 else ""
            if ra.rc == "timeout":
                probs.append("ORACLE: rsync did not finish in %g s%s (README: rsync -H hangs "
                             "when a non-empty directory stands where a hard link goes)" % (
                                 self.e.a.timeout, run))
            elif ra.ok() != rb.ok():
                probs.append("exit status%s: rsync %s, rdcp %s" % (run, ra.rc, rb.rc))
            elif (ra.rc == 1) != (rb.rc == 1):
                # 1 is a usage error to both: one refused the command line
                probs.append("exit status%s: rsync %s, rdcp %s (1: usage error)" % (
                    run, ra.rc, rb.rc))
            elif ra.rc != rb.rc:
                self.notes.setdefault(m, []).append(
                    "exit codes differ%s: rsync %s, rdcp %s" % (run, ra.rc, rb.rc))
                if self.e.a.strict_exit:
                    probs.append("exit code%s: rsync %s, rdcp %s" % (run, ra.rc, rb.rc))
            if self.c.itemize:
                # rsync itemizes a push from the sending side ('<'), as
                # rdcp does; the oracle runs locally, where it says '>'
                ib = rb.items()
                if m in ("push", "ssh-push"):
                    ib = sorted(b">" + x[1:] if x.startswith(b"<") else x for x in ib)
                probs += compare.item_diff(ra.items(), ib, run)
        d = compare.diff(sa, sb)
        if d:
            probs.append("tree differences (rsync's side vs rdcp's):")
            probs += ["  " + x for x in d]
        return probs

    # -- check "refused": rdcp must refuse (and change nothing) where rsync
    # goes ahead; then, with the full source, both must agree again (so an
    # option rdcp does not know yet cannot pass for a refusal)
    def check_refused(self, t0):
        before = {m: compare.snapshot(self.side(m), self.snap_opts(m)) for m in self.modes}
        self.ran["rsync"] = [self.tool("rsync")]
        for m in self.modes:
            self.ran[m] = [self.tool(m)]
        for m in self.modes:
            probs = []
            r = self.ran[m][0]
            if r.ok():
                probs.append("exit status: rdcp 0, but this case must be refused")
            d = compare.diff(before[m], compare.snapshot(self.side(m), self.snap_opts(m)),
                             ("before", "rdcp"))
            if d:
                probs.append("the refused run changed the tree (before vs rdcp):")
                probs += ["  " + x for x in d]
            self.results[m] = probs
        # the control: the same command with the whole source
        for s in ["rsync"] + list(self.modes):
            src = os.path.join(self.side(s), "src")
            os.rmdir(src)
            gen.materialize(self.full_src, src, self.side(s))
        t1 = time.time_ns()
        a = [self.tool("rsync")]
        self.ran["rsync"] += a
        for m in self.modes:
            b = [self.tool(m)]
            self.ran[m] += b
            probs = self.compare_sides(m, t1, a, b)
            if probs:
                self.results[m] += ["with the whole source (the control run):"] + probs

    # -- check "rsync_quiet_after": rsync -ani after the tool lists nothing
    def check_rsync_quiet_after(self, t0):
        opts = expand(self.c.rsync_opts, self.lists) + ["-n", "-i"]
        sides = ["rsync"] + list(self.modes)
        for s in sides:
            r = self.tool(s)
            # a daemon push keeps no owners and no setuid/setgid bits (by design)
            extra = ["--no-o", "--no-g", "--chmod=ug-s"] if s == "push" else []
            after = self.rsync(opts + extra, self.side(s))
            self.ran[s] = [r, after]
        ctl = self.ran["rsync"]
        for m in self.modes:
            probs = []
            r, after = self.ran[m]
            if ctl[0].ok() != r.ok():
                probs.append("exit status: rsync %s, rdcp %s" % (ctl[0].rc, r.rc))
            if ctl[1].items():
                probs.append("HARNESS: rsync -ani lists changes after rsync itself")
            if after.items():
                probs.append("`%s` after rdcp lists %d changes:" % (
                    " ".join(["rsync"] + opts), len(after.items())))
                probs += ["  " + compare.show(x) for x in after.items()]
            self.results[m] = probs

    # -- check "untouched_after_rsync": after rsync, the tool changes nothing
    def check_untouched_after_rsync(self, t0, extra=()):
        sides = ["rsync"] + list(self.modes)
        snaps = {}
        for s in sides:
            first = self.rsync(expand(self.c.rsync_opts, self.lists), self.side(s))
            before = compare.snapshot(self.side(s), self.snap_opts(s, inodes=True))
            r = self.tool(s, extra)
            after = compare.snapshot(self.side(s), self.snap_opts(s, inodes=True))
            self.ran[s] = [first, r]
            snaps[s] = (before, after)
        ctl = self.ran["rsync"]
        ctl_diff = compare.diff(*snaps["rsync"], names=("before", "after"))
        for m in self.modes:
            probs = []
            first, r = self.ran[m]
            if not first.ok():
                probs.append("HARNESS: the first rsync failed (%s)" % first.rc)
            if ctl[1].ok() != r.ok():
                probs.append("exit status: rsync %s, rdcp %s" % (ctl[1].rc, r.rc))
            if ctl_diff:
                probs.append("HARNESS: rsync's own rerun touched the tree")
            if extra:
                if ctl[1].items():
                    probs.append("HARNESS: rsync -ni after rsync lists changes")
                if r.items():
                    probs.append("rdcp %s after rsync lists %d changes:" % (
                        " ".join(extra), len(r.items())))
                    probs += ["  " + compare.show(x) for x in r.items()]
            d = compare.diff(*snaps[m], names=("before", "after"))
            if d:
                probs.append("rdcp changed the tree rsync had just made (before vs after):")
                probs += ["  " + x for x in d]
            self.results[m] = probs

    def check_ni_quiet_after_rsync(self, t0):
        self.check_untouched_after_rsync(t0, extra=("-n", "-i"))

    # -- reporting ---------------------------------------------------------
    def report(self, mode, full=True):
        c = self.c
        lines = ["FAIL %s [%s] seed %d (issue %d)%s" % (
            c.name, mode, self.seed, c.issue, ": " + c.note if c.note else "")]
        for side in ("rsync", mode):
            for r in self.ran.get(side, []):
                lines.append("  %s: exit %s in %.2f s: %s" % (
                    "rsync" if side == "rsync" else "rdcp ", r.rc, r.secs, r.line()))
                if full:
                    for ln in tail(r.err, 6):
                        lines.append("      | " + ln)
        probs = self.results[mode]
        lim = self.e.a.max_lines
        lines += ["  " + p for p in probs[:lim]]
        if len(probs) > lim:
            lines.append("  ... and %d more lines (--max-lines)" % (len(probs) - lim))
        lines.append("  reproduce: %s" % self.repro(mode))
        return "\n".join(lines)

    def repro(self, mode):
        return "tests/diff/run.py --case %s --mode %s --seed %d --keep" % (
            self.c.name, mode, self.seed)


def tail(b, n):
    ls = b.decode("utf-8", "backslashreplace").splitlines()
    return ls[-n:]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rdcp", default=os.environ.get("RDCP", os.path.join(
        REPO, "bazel-bin/cmd/rdcp/rdcp")), help="rdcp binary (default: bazel-bin's)")
    p.add_argument("--rdcpd", default=os.environ.get("RDCPD", os.path.join(
        REPO, "bazel-bin/cmd/rdcpd/rdcpd")), help="rdcpd binary (default: bazel-bin's)")
    p.add_argument("--case", action="append", default=[],
                   help="run these cases (comma separated, repeatable; a name ending "
                   "in . is a group: dir., qc., filter., ...)")
    p.add_argument("--mode", action="append", default=[],
                   help="modes: push, pull (daemon), ssh-push, ssh-pull, local "
                   "(comma separated; default: all the case list names)")
    p.add_argument("--pending", action="store_true",
                   help="run the pending list (what rdcp does not do like rsync yet)")
    p.add_argument("--all", action="store_true", help="run supported and pending")
    p.add_argument("--seed", action="append", default=[],
                   help="these seeds (comma separated) instead of --seeds")
    p.add_argument("--seeds", type=int, default=3, help="seeds per case (default 3)")
    p.add_argument("--seed-base", type=int, default=int(os.environ.get("DIFF_SEED_BASE", 1)),
                   help="first seed (default 1, or $DIFF_SEED_BASE)")
    p.add_argument("--random", action="store_true", help="a random --seed-base (printed)")
    p.add_argument("--host", default="127.0.0.1", help="address of the daemon and sshd")
    p.add_argument("--transport", default="tcp", choices=("tcp", "rdma", "auto"))
    p.add_argument("--rdcp-opt", action="append", default=None,
                   help="extra rdcp options (default: --chunk-size 4K, so small files "
                   "span several chunks)")
    p.add_argument("--no-ssh-mux", dest="ssh_mux", action="store_false",
                   help="a fresh ssh connection per run (default: one multiplexed)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="cases at once (default 2)")
    p.add_argument("--timeout", type=float, default=60, help="seconds per command")
    p.add_argument("--strict-exit", action="store_true",
                   help="non-zero exit codes must be equal too (default: zero vs non-zero)")
    p.add_argument("--workdir", default=None, help="where the trees go (default $TMPDIR)")
    p.add_argument("--keep", action="store_true", help="keep the trees of failing cases")
    p.add_argument("--max-lines", type=int, default=40, help="difference lines per failure")
    p.add_argument("--every-seed", action="store_true",
                   help="print every failing seed in full (default: the first per case/mode)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--selftest", action="store_true",
                   help="first prove the harness catches planted differences")
    p.add_argument("--selftest-only", action="store_true", help="only the self-test")
    a = p.parse_args(argv)
    if a.rdcp_opt is None:
        a.rdcp_opt = ["--chunk-size", "4K"]
    else:
        a.rdcp_opt = [x for o in a.rdcp_opt for x in shlex.split(o)]
    return a


def select(a):
    """(case, [modes]) to run, from the lists and the filters."""
    if a.all:
        pairs = [(c, m) for c in cases.C for m in cases.MODES]
    elif a.pending:
        pairs = cases.pending_pairs()
    else:
        pairs = cases.supported_pairs()
    names = [n for x in a.case for n in x.split(",") if n]
    modes = [m for x in a.mode for m in x.split(",") if m]
    for n in names:
        if n not in cases.CASES and not n.endswith("."):
            raise SystemExit("no case %r (--list shows them)" % n)
    for m in modes:
        if m not in cases.MODES:
            raise SystemExit("no mode %r (one of %s)" % (m, ", ".join(cases.MODES)))
    if names:
        want = [c for c in cases.C if c.name in names or any(
            n.endswith(".") and c.name.startswith(n) for n in names)]
        if not (a.pending or a.all):
            # a named case: in the modes asked, else in those it is supported
            # in, else in all
            pairs = [(c, m) for c in want
                     for m in (modes or cases.SUPPORTED.get(c.name) or cases.MODES)]
        else:
            pairs = [(c, m) for c, m in pairs if c in want]
    if modes:
        pairs = [(c, m) for c, m in pairs if m in modes]
    out = {}
    for c, m in pairs:
        out.setdefault(c.name, (c, []))[1].append(m)
    return list(out.values())


def status_of(c, m):
    return "supported" if m in cases.SUPPORTED.get(c.name, ()) else "pending"


def main(argv):
    a = parse_args(argv)
    if a.list:
        for c in cases.C:
            ms = cases.SUPPORTED.get(c.name, ())
            log("%-36s issue %d  supported: %-28s %s" % (
                c.name, c.issue, ",".join(ms) or "-", c.note))
        return 0
    os.umask(0o022)
    if a.random:
        a.seed_base = random.SystemRandom().randint(1, 10**6)
    seeds = [int(s) for x in a.seed for s in x.split(",") if s] or list(
        range(a.seed_base, a.seed_base + a.seeds))
    todo = select(a)
    for f in (a.rdcp, a.rdcpd):
        if not os.access(f, os.X_OK):
            raise SystemExit("no executable %s (bazel build //cmd/...; or --rdcp/--rdcpd)" % f)
    env = Env(a)
    rc = 1
    try:
        modes = {m for _, ms in todo for m in ms}
        if a.selftest or a.selftest_only:
            modes.add("pull")
        if modes & set(DAEMON_MODES):
            env.start_daemon()
        if modes & set(SSH_MODES):
            env.start_sshd()
        if a.selftest or a.selftest_only:
            import selftest
            if not selftest.run(env, Instance, log):
                log("SELFTEST FAILED: the harness does not catch planted differences")
                return 1
            if a.selftest_only:
                rc = 0
                return 0
        rc = run_all(env, todo, seeds)
    finally:
        env.stop()
        if rc == 0 or not a.keep:
            shutil.rmtree(env.base, ignore_errors=True)
            rmtree_forced(env.base)
        else:
            log("trees kept in %s" % env.base)
    return rc


def rmtree_forced(path):
    """rmtree that also gets through 0555 directories made by non-root."""
    if not os.path.exists(path):
        return
    if os.geteuid() != 0:
        for d, dirs, _ in os.walk(path):
            for x in dirs:
                p = os.path.join(d, x)
                if not os.path.islink(p):
                    os.chmod(p, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def run_all(env, todo, seeds):
    a = env.a
    n_inst = len(todo) * len(seeds)
    n_runs = sum(len(ms) for _, ms in todo) * len(seeds)
    log("rdcp-diff: %d cases x %d seeds (%s): %d rdcp runs against rsync %s; transport %s; "
        "work in %s" % (len(todo), len(seeds), ",".join(map(str, seeds[:5])) +
                        (",..." if len(seeds) > 5 else ""), n_runs, rsync_version(),
                        a.transport, env.base))
    if env.daemon:
        log("rdcp-diff: push/pull: rdcpd on %s port %s (a daemon push keeps no owners and no "
            "setuid/setgid bits by design: not compared there)" % (a.host, env.port))
    t0 = time.monotonic()
    done = []
    lock = threading.Lock()

    def one(job):
        (c, ms), seed = job
        inst = Instance(env, c, seed, ms)
        try:
            inst.run()
        except Exception as e:  # a harness error fails the case loudly
            for m in ms:
                inst.results.setdefault(m, []).append("HARNESS ERROR: %r" % e)
        failed = [m for m in ms if inst.results.get(m)]
        if not failed or not a.keep:
            rmtree_forced(inst.dir)
        with lock:
            done.append(inst)
            if len(done) % 25 == 0:
                log("rdcp-diff: %d/%d instances, %.0f s" % (len(done), n_inst,
                                                             time.monotonic() - t0))
        return inst

    jobs = [(t, s) for t in todo for s in seeds]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        list(ex.map(one, jobs))
    secs = time.monotonic() - t0
    return summarize(env, done, todo, seeds, secs)


def summarize(env, done, todo, seeds, secs):
    a = env.a
    by = {}
    for inst in done:
        for m in inst.modes:
            by.setdefault((inst.c.name, m), []).append(inst)
    fails = 0
    printed = set()
    for inst in sorted(done, key=lambda i: (i.c.name, i.seed)):
        for m in inst.modes:
            if inst.results.get(m):
                fails += 1
                key = (inst.c.name, m)
                if a.every_seed or key not in printed:
                    log(inst.report(m))
                    log("")
                printed.add(key)
    log("rdcp-diff: summary (case, mode: passed/seeds)")
    newly = []
    for c, ms in todo:
        row = []
        for m in ms:
            insts = by.get((c.name, m), [])
            ok = [i for i in insts if not i.results.get(m)]
            bad = [str(i.seed) for i in insts if i.results.get(m)]
            st = status_of(c, m)
            row.append("%s %d/%d%s" % (m, len(ok), len(insts),
                                       "" if not bad else " (seeds %s)" % ",".join(bad[:6])))
            if st == "pending" and insts and len(ok) == len(insts):
                newly.append("%s [%s]" % (c.name, m))
        log("  %-34s %s" % (c.name, "; ".join(row)))
    notes = {}
    for inst in done:
        for m, ns in inst.notes.items():
            for n in ns:
                notes.setdefault((inst.c.name, m, n), []).append(inst.seed)
    if notes:
        log("rdcp-diff: exit codes that differ but agree on success/failure:")
        for (name, m, n), ss in sorted(notes.items()):
            log("  %s [%s] %s (seeds %s)" % (name, m, n, ",".join(map(str, ss[:6]))))
    if newly:
        log("rdcp-diff: pending cases that pass now (move them to cases.SUPPORTED):")
        for n in newly:
            log("  " + n)
    if not env.daemon_alive():
        log("rdcp-diff: FAIL: rdcpd died during the run:\n" + env.daemon_log())
        fails += 1
    total = sum(len(ms) for _, ms in todo) * len(seeds)
    log("rdcp-diff: %d of %d case runs passed, %d failed, in %.1f s" % (
        total - fails, total, fails, secs))
    return 1 if fails else 0


def rsync_version():
    try:
        out = subprocess.run(["rsync", "--version"], capture_output=True).stdout
        return out.split(b"\n")[0].decode().replace("rsync  version", "").strip()
    except OSError:
        raise SystemExit("rsync not found: it is the oracle (apt-get install rsync)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
