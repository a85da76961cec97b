#!/usr/bin/env python3
"""Host benchmark (no rig, no RDMA): rdcp over TCP on 127.0.0.1, tmpfs to tmpfs.

    python3 tests/bench/host_bench.py [--mb 1024] [--rdcp PATH] [--rdcpd PATH]
    (or: bash tests/bench/bench.sh --host)

In one run, for one random file of --mb MiB in a tmpfs (/dev/shm):
  rdcp push --checksum-choice none, rdcp push with the default checksum (gmac),
  nc and socat over the same loopback path; then the cost of a resume
  check: the file complete on the receiver with another mtime, pushed again
  (every chunk compared by SUM, nothing should move), beside one sha256
  pass over the file;
each side's CPU seconds per GiB from getrusage (os.wait4 of the client
process and of rdcpd, which is started for each push and stopped after it).
Every received file is compared with its source (untimed). Prints a table;
the target is rdcp --checksum-choice none >= 0.8 x nc.

--threads 1,2,4 (issue 12) instead pushes with every checksum of --checksums
(default none,gmac,sha256) at each --threads N (rdcp and rdcpd alike) and
adds each side's per-thread CPU shares: /proc/PID/task/*/stat sampled every
20 ms while the copy runs (a thread's last sample is kept after it ends, so
up to 20 ms of a thread's work may be missed), summed by thread name
(rdcp-workN: the workers; rdcp-bulk-in/-out: the TCP transport's bulk
payload threads, from --threads 2 on; the rest: loop, TLS, daemon threads).
--pace 0,100M,50M (issue 29) instead pushes with the default checksum unpaced
(0) and at each rate, paced by the client (--bwlimit) and by the daemon (a
module's max rate), and prints each side's CPU seconds per GiB.
Exit status: 0 measured (target met or not), 1 a step failed.
"""
import argparse
import filecmp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

GIB = 1 << 30
RESULTS = os.environ.get("RDCP_BENCH_RESULTS") or \
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def write_results(name, header, rows, what):
    """tests/bench/results/NAME.csv and NAME.meta, for tests/bench/charts.sh."""
    import csv
    import platform
    import subprocess as sp
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, name + ".csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    try:
        rev = sp.run(["git", "-C", os.path.dirname(RESULTS), "rev-parse", "--short", "HEAD"],
                     capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        rev = "?"
    with open(os.path.join(RESULTS, name + ".meta"), "w") as f:
        f.write("%s; %s, %s, %d CPUs, %s; git %s\n" % (
            what, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), model,
            os.cpu_count(), platform.release(), rev))


def wait4(p):
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class TaskSampler:
    """CPU ticks per thread of some processes, sampled from a thread."""

    def __init__(self):
        import threading
        self.pids, self.last, self.stop = [], {}, False
        self.lock = threading.Lock()
        self.th = threading.Thread(target=self.loop, daemon=True)
        self.th.start()

    def add(self, side, pid):
        with self.lock:
            self.pids.append((side, pid))

    def sample(self):
        with self.lock:
            pids = list(self.pids)
        for side, pid in pids:
            try:
                tids = os.listdir("/proc/%d/task" % pid)
            except OSError:
                continue
            for tid in tids:
                try:
                    st = open("/proc/%d/task/%s/stat" % (pid, tid)).read()
                except OSError:
                    continue
                name = st[st.index("(") + 1:st.rindex(")")]
                f = st[st.rindex(")") + 2:].split()
                self.last[(side, pid, tid)] = (name, int(f[11]) + int(f[12]))

    def loop(self):
        while not self.stop:
            self.sample()
            time.sleep(0.02)

    def finish(self):
        self.stop = True
        self.th.join()
        shares = {}
        for (side, _pid, _tid), (name, ticks) in self.last.items():
            if name.startswith("rdcp-work") or name.startswith("rdcp-bulk"):
                pass
            elif side == "send":
                name = "loop/other"
            else:
                name = "daemon/other"
            shares.setdefault(side, {}).setdefault(name, 0)
            shares[side][name] += ticks
        return shares


def rdcp_run(args, src, work, checksum, threads=None, sampler=None, copts=(), max_rate=None):
    mod = os.path.join(work, "mod")
    shutil.rmtree(mod, ignore_errors=True)
    os.mkdir(mod)
    ready = os.path.join(work, "ready")
    if os.path.exists(ready):
        os.unlink(ready)
    topt = ["--threads", str(threads)] if threads else []
    modopt = ["--module", "m=" + mod]
    if max_rate:
        # the module's own max rate: the daemon paces (rdcpd.conf)
        conf = os.path.join(work, "rate.conf")
        with open(conf, "w") as f:
            f.write("[m]\npath = %s\nauth = none\nmax rate = %s\n" % (mod, max_rate))
        modopt = ["--config", conf]
    d = subprocess.Popen([args.rdcpd, "--foreground", "--no-auth"] + modopt +
                         ["--transport", "tcp", "--listen", "127.0.0.1", "--port", "0",
                          "--ready-file", ready] + topt, stderr=subprocess.DEVNULL)
    if sampler:
        sampler.add("recv", d.pid)
    for _ in range(200):
        if os.path.exists(ready) and open(ready).read().strip():
            break
        time.sleep(0.05)
    port = open(ready).read().strip()
    cmd = [args.rdcp, "-q", "--transport", "tcp", "--port", port, "--checksum-choice", checksum,
           "--no-fsync"] + topt + list(copts) + [src, "127.0.0.1::m/"]
    t0 = time.monotonic()
    c = subprocess.Popen(cmd)
    if sampler:
        sampler.add("send", c.pid)
    ccpu = wait4(c)
    dt = time.monotonic() - t0
    d.send_signal(signal.SIGTERM)
    dcpu = wait4(d)
    ok = c.returncode == 0 and filecmp.cmp(src, os.path.join(mod, os.path.basename(src)),
                                           shallow=False)
    shutil.rmtree(mod, ignore_errors=True)
    return ok, dt, ccpu, dcpu


def resume_run(args, src, work):
    """The cost of a resume check (issue 11): the file is already complete on
    the receiver but its mtime differs, so every chunk is compared by SUM
    (SHA-256 on both sides) and nothing should move. Returns (ok, seconds of
    the checking push, bytes moved, bytes kept, seconds of one sha256 pass
    over the file in this process)."""
    import hashlib
    import json
    mod = os.path.join(work, "mod")
    shutil.rmtree(mod, ignore_errors=True)
    os.mkdir(mod)
    dst = os.path.join(mod, os.path.basename(src))
    shutil.copyfile(src, dst)
    st = os.stat(src)
    os.utime(dst, (st.st_atime, st.st_mtime - 3600))
    ready = os.path.join(work, "ready")
    if os.path.exists(ready):
        os.unlink(ready)
    d = subprocess.Popen([args.rdcpd, "--foreground", "--no-auth", "--module", "m=" + mod,
                          "--transport", "tcp", "--listen", "127.0.0.1", "--port", "0",
                          "--ready-file", ready], stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(ready) and open(ready).read().strip():
            break
        time.sleep(0.05)
    port = open(ready).read().strip()
    t0 = time.monotonic()
    r = subprocess.Popen([args.rdcp, "--json", "--transport", "tcp", "--port", port,
                          "--no-fsync", src, "127.0.0.1::m/"], stdout=subprocess.PIPE)
    out = r.stdout.read()
    ccpu = wait4(r)
    dt = time.monotonic() - t0
    d.send_signal(signal.SIGTERM)
    dcpu = wait4(d)
    rep = json.loads(out.decode() or "{}")
    ok = r.returncode == 0 and filecmp.cmp(src, dst, shallow=False)
    shutil.rmtree(mod, ignore_errors=True)
    import resource
    h = hashlib.sha256()
    t1 = time.monotonic()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    with open(src, "rb") as f:
        for b in iter(lambda: f.read(1 << 22), b""):
            h.update(b)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    pcpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    return ok, dt, rep.get("bytes_moved", -1), rep.get("bytes_resumed", -1), \
        time.monotonic() - t1, ccpu, dcpu, pcpu


def pipe_run(recv_cmd, send_cmd, out, stdin=None):
    if os.path.exists(out):
        os.unlink(out)
    with open(out, "wb") as f, open(stdin or os.devnull, "rb") as fin:
        r = subprocess.Popen(recv_cmd, stdout=f)
        time.sleep(0.3)
        t0 = time.monotonic()
        s = subprocess.Popen(send_cmd, stdin=fin)
        scpu = wait4(s)
        rcpu = wait4(r)
        dt = time.monotonic() - t0
    return s.returncode == 0 and r.returncode == 0, dt, scpu, rcpu


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--rdcp", default=os.path.join(top, "bazel-bin/cmd/rdcp/rdcp"))
    ap.add_argument("--rdcpd", default=os.path.join(top, "bazel-bin/cmd/rdcpd/rdcpd"))
    ap.add_argument("--target", type=float, default=0.8)
    ap.add_argument("--threads", help="e.g. 1,2,4: the --threads matrix instead of nc/socat")
    ap.add_argument("--checksums", default="none,gmac,sha256")
    ap.add_argument("--pace", help="e.g. 0,100M,50M: CPU per GiB unpaced (0) and at each rate, "
                    "paced by the client (--bwlimit) and by the daemon (max rate)")
    args = ap.parse_args()
    if args.threads:
        return matrix(args)
    if args.pace:
        return pace(args)
    work = tempfile.mkdtemp(prefix="rdcp-hostbench.", dir="/dev/shm")
    rows, failed = [], False
    try:
        src = os.path.join(work, "file")
        with open(src, "wb") as f:
            for _ in range(args.mb):
                f.write(os.urandom(1 << 20))
        size = os.path.getsize(src)
        gib = size / GIB
        out = os.path.join(work, "out")
        for name, checksum in (("rdcp --checksum-choice none", "none"),
                               ("rdcp (gmac, default)", "gmac")):
            ok, dt, c, d = rdcp_run(args, src, work, checksum)
            rows.append((name, ok, dt, c, d))
        port = free_port()
        ok, dt, scpu, rcpu = pipe_run(["nc", "-l", "127.0.0.1", str(port)],
                                      ["nc", "-N", "127.0.0.1", str(port)], out, stdin=src)
        ok = ok and filecmp.cmp(src, out, shallow=False)
        rows.append(("nc (OpenBSD netcat)", ok, dt, scpu, rcpu))
        port = free_port()
        ok, dt, scpu, rcpu = pipe_run(
            ["socat", "-u", "TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr" % port, "STDOUT"],
            ["socat", "-u", "OPEN:" + src, "TCP:127.0.0.1:%d" % port], out)
        ok = ok and filecmp.cmp(src, out, shallow=False)
        rows.append(("socat", ok, dt, scpu, rcpu))
        res = resume_run(args, src, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print("host bench: %d MiB, tmpfs -> tmpfs over TCP 127.0.0.1, %d CPUs, %s" %
          (args.mb, os.cpu_count(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    print("%-24s %9s %10s %14s %14s  %s" % ("tool", "seconds", "MiB/s", "CPU s/GiB send",
                                            "CPU s/GiB recv", "verified"))
    for name, ok, dt, c, d in rows:
        failed |= not ok
        print("%-24s %9.2f %10.0f %14.2f %14.2f  %s" % (name, dt, args.mb / dt if dt else 0,
                                                       c / gib, d / gib, "yes" if ok else "NO"))
    ok, dt, moved, kept, dig, ccpu, dcpu, pcpu = res
    failed |= not ok
    print("resume check, %d MiB complete on the receiver (mtime differs: every chunk "
          "compared by SUM): %.2f s, %d bytes moved, %d kept, verified %s; one sha256 pass "
          "over the file here: %.2f s" % (args.mb, dt, moved, kept, "yes" if ok else "NO", dig))
    # Each side reads the whole file once and digests it (SHA-256): on two
    # hosts they run side by side, so a side's CPU time is the check's cost
    # (the target: one read + digest pass, like the one measured here); on
    # this one host both share its CPUs, so the wall time is about two.
    print("resume check CPU: sender (rdcp) %.2f s, receiver (rdcpd) %.2f s; one read + "
          "sha256 pass %.2f s CPU: %.2f x and %.2f x of it; wall %.2f x the pass" %
          (ccpu, dcpu, pcpu, ccpu / pcpu, dcpu / pcpu, dt / dig))
    write_results("host", ["tool", "mib_s", "cpu_s_per_gib_send", "cpu_s_per_gib_recv"],
                  [(n, "%.1f" % (args.mb / dt), "%.3f" % (c / gib), "%.3f" % (d / gib))
                   for n, ok, dt, c, d in rows if ok and dt],
                  "python3 tests/bench/host_bench.py --mb %d, over TCP on 127.0.0.1" % args.mb)
    nc_rate = args.mb / rows[2][2]
    none_rate = args.mb / rows[0][2]
    print("rdcp --checksum-choice none / nc = %.2f (target >= %.2f: %s)" %
          (none_rate / nc_rate, args.target, "met" if none_rate / nc_rate >= args.target
           else "NOT met"))
    return 1 if failed else 0


def pace(args):
    """CPU seconds per GiB of both sides, unpaced and at each rate of --pace
    (issue 29: pacing waits in the poll, so a paced GiB costs no more)."""
    work = tempfile.mkdtemp(prefix="rdcp-hostbench.", dir="/dev/shm")
    rows, failed = [], False
    try:
        src = os.path.join(work, "file")
        with open(src, "wb") as f:
            for _ in range(args.mb):
                f.write(os.urandom(1 << 20))
        gib = os.path.getsize(src) / GIB
        for rate in args.pace.split(","):
            if rate in ("0", ""):
                ok, dt, c, d = rdcp_run(args, src, work, "gmac")
                rows.append(("unpaced", ok, dt, c, d))
                continue
            ok, dt, c, d = rdcp_run(args, src, work, "gmac", copts=["--bwlimit=" + rate])
            rows.append(("--bwlimit=" + rate + " (client)", ok, dt, c, d))
            ok, dt, c, d = rdcp_run(args, src, work, "gmac", max_rate=rate)
            rows.append(("max rate = " + rate + " (daemon)", ok, dt, c, d))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("host bench, pacing: %d MiB push, gmac, tmpfs -> tmpfs over TCP 127.0.0.1, %d CPUs, %s" %
          (args.mb, os.cpu_count(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    print("%-30s %9s %10s %14s %14s  %s" % ("limit", "seconds", "MiB/s", "CPU s/GiB send",
                                            "CPU s/GiB recv", "verified"))
    for name, ok, dt, c, d in rows:
        failed |= not ok
        print("%-30s %9.2f %10.1f %14.3f %14.3f  %s" % (name, dt, args.mb / dt if dt else 0,
                                                       c / gib, d / gib, "yes" if ok else "NO"))
    return 1 if failed else 0


def fmt_shares(sh):
    total = sum(sh.values()) or 1
    parts = sorted(sh.items(), key=lambda kv: kv[0])
    return " ".join("%s %.0f%%" % (k.replace("rdcp-work", "w"), 100.0 * v / total)
                    for k, v in parts)


def matrix(args):
    work = tempfile.mkdtemp(prefix="rdcp-hostbench.", dir="/dev/shm")
    rows, failed = [], False
    try:
        src = os.path.join(work, "file")
        with open(src, "wb") as f:
            for _ in range(args.mb):
                f.write(os.urandom(1 << 20))
        gib = os.path.getsize(src) / GIB
        for checksum in args.checksums.split(","):
            for t in [int(x) for x in args.threads.split(",")]:
                sampler = TaskSampler()
                ok, dt, c, d = rdcp_run(args, src, work, checksum, t, sampler)
                sh = sampler.finish()
                rows.append((checksum, t, ok, dt, c, d, sh))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("host bench (--threads): %d MiB push, tmpfs -> tmpfs over TCP 127.0.0.1, %d CPUs, "
          "load %.1f, %s" % (args.mb, os.cpu_count(), os.getloadavg()[0],
                             time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    print("%-8s %3s %8s %8s %8s %8s  %s" % ("checksum", "thr", "seconds", "MiB/s", "send s/G",
                                            "recv s/G", "ok"))
    for checksum, t, ok, dt, c, d, sh in rows:
        failed |= not ok
        print("%-8s %3d %8.2f %8.0f %8.2f %8.2f  %s" % (checksum, t, dt, args.mb / dt, c / gib,
                                                        d / gib, "yes" if ok else "NO"))
        print("    send threads: %s" % fmt_shares(sh.get("send", {})))
        print("    recv threads: %s" % fmt_shares(sh.get("recv", {})))
    write_results("threads", ["checksum", "threads", "mib_s", "cpu_s_per_gib_send",
                              "cpu_s_per_gib_recv"],
                  [(ck, t, "%.1f" % (args.mb / dt), "%.3f" % (c / gib), "%.3f" % (d / gib))
                   for ck, t, ok, dt, c, d, sh in rows if ok and dt],
                  "python3 tests/bench/host_bench.py --threads %s --checksums %s --mb %d, "
                  "over TCP on 127.0.0.1" % (args.threads, args.checksums, args.mb))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
