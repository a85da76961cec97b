#!/usr/bin/env bash
# bench.sh - rdcp throughput and receiver-memory benchmark on the Soft-RoCE rig.
#
#   bash tests/bench/bench.sh            build //cmd/..., boot two VMs once, measure, report
#   bash tests/bench/bench.sh --host     no rig: rdcp over TCP on 127.0.0.1 beside nc and
#                                        socat, tmpfs to tmpfs (tests/bench/host_bench.py)
#   bash tests/bench/bench.sh --many     small jobs (issue 14): start-up of a 3-byte push beside
#                                        rping -C 1 (same run), 64 clients at once from one VM
#                                        (peak RSS and registered memory per client), 8 clients
#                                        each pulling a 200 MiB file (each one's rate; written
#                                        to the shared 9p dir: 1.6 GB do not fit a guest's tmpfs).
#                                        tests/e2e/many_guest.sh; CI runs it small (many_2vm_test)
#   bash tests/bench/bench.sh --small    many small files (issue 13): three trees (SMALL_TREES:
#                                        5,000 x 4 KiB, 50,000 x 1 KiB, mixed = 5,000 x 4 KiB + 3 x
#                                        64 MiB) by tar|nc, rdcp -r to rdcpd, rsync -a to rsyncd,
#                                        scp -r (trees up to SMALL_SCP_MAX files), one boot; ratios
#                                        to tar|nc (tests/bench/small_guest.sh)
#
# In ONE `tests/rig/rig.sh run2` boot (a = 10.77.2.1 client, b = 10.77.2.2 server),
# on the same wire, for a BENCH_MB random file:
#   BENCH_ROUNDS rounds of: rdcp push --checksum-choice none, the default integrity (gmac),
#   then ib_write_bw -s 4194304 (one more ib_write_bw before the first round), so each
#   copy has an ib_write_bw just before and just after it; then sha256, blake2b512,
#   --lanes 2, --threads 2, rdcp push of a BENCH_SMALL_MB file, scp, rsync over ssh,
#   and a last ib_write_bw; rdcpd's VmHWM after every rdcp push (rdcpd restarted per
#   push); one core's digest rates in guest b (digest_bench) while a makes its data;
#   the guest's file read and write rates (dd, 4 MiB blocks, tmpfs).
# Ratios, per round against the mean of the ib_write_bw runs either side of it, and
# their median over the rounds (the shared host moves ib_write_bw by 20 % between
# runs a minute apart): --checksum-choice none / ib_write_bw (BENCH_TARGET), and the default
# integrity / its CPU cap (BENCH_CAP_TARGET); see integrity_cap(). Each rdcp rate is
# given twice: wall clock around the client (start-up included) and the data phase
# (wall clock less rdcp's own start-up_seconds: from the session's chunk key to the
# exit, as ib_write_bw's figure runs from its first post to its last completion).
# Prints a table and writes it to tests/bench/results/latest.txt (step logs: latest.log).
#
# Environment:
#   BENCH_MB=256          size of the main file, MiB
#   BENCH_ROUNDS=5        rounds of (none, gmac, ib_write_bw); verdicts on the median
#   BENCH_SMALL_MB=64     size of the second rdcp push (memory comparison), MiB
#   BENCH_TARGET=0.95     required ratio rdcp --checksum-choice none / ib_write_bw
#   BENCH_CAP_TARGET=0.9  required ratio rdcp (default integrity) / its CPU cap
#   BENCH_DIGEST_MB=128   MiB digest_bench hashes per kind in the guest
#   BENCH_VERIFY=1        md5-compare every received file with its source (untimed)
#   BENCH_BUILD=1         run `bazel build //cmd/...` first (0: use what bazel-bin has)
#   BENCH_RDCP, BENCH_RDCPD  use these binaries instead of bazel-bin's
#   BENCH_TIMEOUT         rig timeout, seconds (default: max(600, 240 + 3*BENCH_MB +
#                         10*BENCH_ROUNDS*(BENCH_MB/64 + 1)))
#   BENCH_STEP_TIMEOUT    per-step timeout, seconds (default: 60 + BENCH_MB)
#   BENCH_ONLY="ibw1 rdcp_none rdcp_gmac ibw_m1"  run only these steps (the rest
#                         are reported as skipped; with BENCH_ROUNDS=1 that is one
#                         round); round k > 1 is rdcp_none_rk rdcp_gmac_rk ibw_mk;
#                         rdcp_none_lanes2 is --lanes 2
#   BENCH_RAILS=2         boot the rig with a second wire and rxe1 in each VM: then
#                         rdcp_none_lanes2 runs its two lanes over both devices
#
# Exit status: 0 every measurement ran (whether or not the target is met);
# 1 some step produced no number (see the report); 2 usage; 3 missing tool or build
# failure; 124/125 the rig timed out / failed before producing any result.
set -uo pipefail

if [ "${1:-}" = --host ]; then
  shift
  exec python3 "$(dirname "$0")/host_bench.py" "$@"
fi

# meta WHAT: one line for a chart's caption: date, machine, commit, command.
meta() {
  local r
  r=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
  printf '%s; %s, %s, %s CPUs, %s; git %s\n' "$*" "$(date -u '+%Y-%m-%d %H:%M UTC')" \
    "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)" "$(nproc)" \
    "$(uname -r)" "$(git -C "$r" rev-parse --short HEAD 2>/dev/null || echo '?')"
}

if [ "${1:-}" = --small ]; then
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
  if [ "${BENCH_BUILD:-1}" = 1 ]; then
    (cd "$repo" && bazel build //cmd/rdcp //cmd/rdcpd >&2) || exit 3
  fi
  cmd="env SMALL_TREES='${SMALL_TREES:-5000x4096 50000x1024 mixed}' SMALL_SCP_MAX=${SMALL_SCP_MAX:-5000}"
  cmd+=" SMALL_MIXED_N=${SMALL_MIXED_N:-5000} SMALL_MIXED_BIG=${SMALL_MIXED_BIG:-3} SMALL_MIXED_MB=${SMALL_MIXED_MB:-64}"
  cmd+=" bash $repo/tests/bench/small_guest.sh $(readlink -f "$repo/bazel-bin/cmd/rdcp/rdcp")"
  cmd+=" $(readlink -f "$repo/bazel-bin/cmd/rdcpd/rdcpd") $repo/tests/e2e/guest_lib.sh"
  out="$repo/tests/bench/results"
  mkdir -p "$out"
  bash "$repo/tests/rig/rig.sh" run2 --timeout "${BENCH_TIMEOUT:-3600}" --a "$cmd" --b "$cmd" |
    grep -E '^\[a\] (small|PASS|FAIL|guest|    \|)|^\[b\] (b:|guest|FAIL)' | tee "$out/small.txt"
  st=${PIPESTATUS[0]}
  # the chart's data: tree,tool,seconds (from the "small: TREE (N files): ..." lines)
  {
    echo "tree,tool,seconds"
    sed -n 's/^\[a\] small: \([^ ]*\) (\([0-9]*\) files): \(.*\)$/\1 \2 \3/p' "$out/small.txt" |
      while read -r tree n rest; do
        for t in "tar|nc" "rdcp -r" "rsync -a" "scp -r"; do
          v=$(printf '%s\n' "$rest" | grep -oE "$(printf '%s' "$t" | sed 's/|/\\|/') [0-9.]+ s" | grep -oE '[0-9.]+' | head -n1)
          [ -n "$v" ] && printf '"%s (%s files)","%s",%s\n' "$tree" "$n" "$t" "$v"
        done
      done
  } >"$out/small.csv"
  meta "bash tests/bench/bench.sh --small (SMALL_TREES=${SMALL_TREES:-5000x4096 50000x1024 mixed}), two-VM Soft-RoCE rig" >"$out/small.meta"
  exit "$st"
fi

if [ "${1:-}" = --many ]; then
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
  if [ "${BENCH_BUILD:-1}" = 1 ]; then
    (cd "$repo" && bazel build //cmd/rdcp //cmd/rdcpd //tests/bench:tls_floor >&2) || exit 3
  fi
  cmd="env RIG_MODE=2 FAIR_MB=${FAIR_MB:-200} FAIR_DIR=shared STARTUP_RUNS=${STARTUP_RUNS:-9}"
  cmd+=" TLS_FLOOR=$(readlink -f "$repo/bazel-bin/tests/bench/tls_floor")"
  cmd+=" bash $repo/tests/e2e/many_guest.sh $(readlink -f "$repo/bazel-bin/cmd/rdcp/rdcp")"
  cmd+=" $(readlink -f "$repo/bazel-bin/cmd/rdcpd/rdcpd") $repo/tests/e2e/guest_lib.sh"
  bash "$repo/tests/rig/rig.sh" run2 --timeout "${BENCH_TIMEOUT:-3600}" --a "$cmd" --b "$cmd" |
    grep -E '^\[a\] (startup|memory|fair|PASS|FAIL|guest)|^\[b\] (sessions|memory|guest)'
  exit "${PIPESTATUS[0]}"
fi

readonly CHUNK=4194304
readonly IBW_PORT=18515
readonly SSH_PORT=2222
readonly GDIR=/tmp/rdcp-bench # in the guest (tmpfs)

die() {
  printf 'bench: error: %s\n' "$*" >&2
  exit 3
}
log() { printf 'bench: %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------
# Shared helpers (guest side)
# ---------------------------------------------------------------------------
now() { printf '%s' "$EPOCHREALTIME"; }

# nap: a sleep without a fork (tests/e2e/nap.sh: an external sleep costs tens
# of ms of the guest's emulated CPU, taken from the copy measured beside it)
# shellcheck source=tests/e2e/nap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/nap.sh"

# wait_for FILE TIMEOUT: 0 when FILE exists, 1 on timeout, 2 when the peer VM is gone.
wait_for() {
  local f=$1 to=$2 end
  end=$((SECONDS + to))
  while [ "$SECONDS" -lt "$end" ]; do
    [ -e "$f" ] && return 0
    if [ -e "/run/rig/share/sync/done-$PEER" ]; then
      [ -e "$f" ] && return 0
      return 2
    fi
    nap 0.1
  done
  [ -e "$f" ]
}

# wait_grep FILE PATTERN TIMEOUT PID: 0 when PATTERN shows up in FILE; 1 if not
# within TIMEOUT or PID exited first.
wait_grep() {
  local f=$1 pat=$2 to=$3 pid=$4 end
  end=$((SECONDS + to))
  while [ "$SECONDS" -lt "$end" ]; do
    grep -q -- "$pat" "$f" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    nap 0.1
  done
  grep -q -- "$pat" "$f" 2>/dev/null
}

# wait_listen PORT TIMEOUT PID: 0 once a TCP listener is on PORT; 1 on timeout or if PID exited.
wait_listen() {
  local port=$1 to=$2 pid=$3 end
  end=$((SECONDS + to))
  while [ "$SECONDS" -lt "$end" ]; do
    ss -Hltn "( sport = :$port )" 2>/dev/null | grep -q . && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    nap 0.1
  done
  return 1
}

# stop_pid PID: TERM, wait up to 10 s, then KILL. Only for processes this script started.
stop_pid() {
  local pid=$1 i
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    nap 0.1
  done
  [ "${i:-0}" -ge 100 ] && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

# wait_exit PID TIMEOUT: wait for a child to exit by itself; returns its status,
# or 124 after killing it on timeout.
wait_exit() {
  local pid=$1 to=$2 end
  end=$((SECONDS + to))
  while [ "$SECONDS" -lt "$end" ]; do
    kill -0 "$pid" 2>/dev/null || break
    nap 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    stop_pid "$pid"
    return 124
  fi
  wait "$pid"
}

# put FILE TEXT: atomic write into the shared dir.
put() {
  printf '%s\n' "$2" >"$1.tmp.$RIG_ROLE" && mv -f "$1.tmp.$RIG_ROLE" "$1"
}

# res STEP KEY VALUE: append a result for this VM.
res() {
  printf '%s=%s\n' "$2" "$3" >>"$S/res/$1.$RIG_ROLE"
}

# Step list: NAME KIND FILE-MB EXTRA (rdcp: CHECKSUM[+lanesN]); BENCH_ONLY keeps some.
steps() {
  all_steps | while read -r n rest; do
    skipped "$n" || echo "$n $rest"
  done
}

# skipped STEP: BENCH_ONLY is set and does not name STEP.
skipped() {
  [ -n "${BENCH_ONLY:-}" ] && ! [[ " $BENCH_ONLY " == *" $1 "* ]]
}

all_steps() {
  local k
  echo "ibw1 ibw $BENCH_MB -"
  for k in $(seq "$BENCH_ROUNDS"); do
    echo "$(round_step rdcp_none "$k") rdcp $BENCH_MB none"
    echo "$(round_step rdcp_gmac "$k") rdcp $BENCH_MB default"
    echo "ibw_m$k ibw $BENCH_MB -"
  done
  cat <<EOF
ibw_short ibw $IBW_SHORT_MB -
rdcp_none_lanes2 rdcp $BENCH_MB none+lanes2
rdcp_gmac_t2 rdcp $BENCH_MB default+threads2
rdcp_sha256 rdcp $BENCH_MB sha256
rdcp_blake2b512 rdcp $BENCH_MB blake2b512
rdcp_none_small rdcp $BENCH_SMALL_MB none
scp ssh $BENCH_MB scp
rsync ssh $BENCH_MB rsync
nc nc $BENCH_MB -
ibw2 ibw $BENCH_MB -
EOF
}

# round_step NAME K: round 1 keeps the plain name (BENCH_ONLY, earlier reports).
round_step() {
  if [ "$2" = 1 ]; then printf '%s' "$1"; else printf '%s_r%s' "$1" "$2"; fi
}

# ibw_before K / ibw_after K: the ib_write_bw steps either side of round K.
ibw_before() {
  if [ "$1" = 1 ]; then printf ibw1; else printf 'ibw_m%s' "$(($1 - 1))"; fi
}
ibw_after() { printf 'ibw_m%s' "$1"; }

guest_common() {
  S=$RIG_SHARED
  PEER=b
  [ "$RIG_ROLE" = b ] && PEER=a
  mkdir -p "$S/res" "$S/log" "$GDIR" || exit 1
  IBW_SHORT_MB=$((BENCH_MB / 4))
  [ "$IBW_SHORT_MB" -lt 4 ] && IBW_SHORT_MB=4
  STEP_TO=${BENCH_STEP_TIMEOUT:-$((60 + BENCH_MB))}
  export PEER S IBW_SHORT_MB STEP_TO
}

# ibw_iters MB: ib_write_bw iterations for MB MiB of 4 MiB messages (perftest wants >= 5).
ibw_iters() {
  local n=$(($1 * 1048576 / CHUNK))
  [ "$n" -lt 5 ] && n=5
  printf '%s' "$n"
}

src_file() { printf '%s/src-%s' "$GDIR" "$1"; }

# ---------------------------------------------------------------------------
# Guest a: data generation and every client.
# ---------------------------------------------------------------------------
guest_a() {
  guest_common
  local mb f t0 t1 failed=0
  # Data: random files in this guest's tmpfs (untimed).
  for mb in "$BENCH_MB" "$BENCH_SMALL_MB"; do
    f=$(src_file "$mb")
    [ -e "$f" ] && continue
    t0=$(now)
    if ! head -c "$((mb * 1048576))" /dev/urandom >"$f" ||
      [ "$(stat -c %s "$f")" != "$((mb * 1048576))" ]; then
      put "$S/a-prepared" "fail: could not generate $f"
      echo "bench[a]: could not generate $f" >&2
      exit 1
    fi
    t1=$(now)
    [ "$BENCH_VERIFY" = 1 ] && md5sum "$f" | cut -d' ' -f1 >"$S/res/md5-$mb"
    echo "bench[a]: generated $mb MiB in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s"
  done
  a_file_rates "$(src_file "$BENCH_MB")"
  mkdir -p "$GDIR/ssh"
  if ssh-keygen -q -t ed25519 -N '' -C bench-client -f "$GDIR/ssh/id" >"$S/log/keygen-a.log" 2>&1; then
    cp "$GDIR/ssh/id.pub" "$S/client_key.pub.tmp" && mv "$S/client_key.pub.tmp" "$S/client_key.pub"
  fi
  put "$S/a-prepared" ok

  local name kind mb extra st
  while read -r name kind mb extra; do
    st=0
    a_step "$name" "$kind" "$mb" "$extra" || st=$?
    [ "$st" != 0 ] && failed=1
    put "$S/done-$name" "$st"
  done <<<"$(steps)"
  put "$S/a-finished" ok
  return "$failed"
}

# a_file_rates SRC: this guest's tmpfs read and write rates with 4 MiB blocks, the
# calls rdcp's sender (pread) and receiver (pwrite into a new file) make per chunk.
# Both VMs are the same machine. Read: SRC to /dev/null; write: SRC to a new file,
# less the read time. Best of three, MiB/s.
a_file_rates() {
  local src=$1 n=64 i t0 t1 t2 r w rb=0 wb=0 mib
  [ "$BENCH_MB" -lt 256 ] && n=$((BENCH_MB / 4))
  mib=$((n * 4))
  for i in 1 2 3; do
    t0=$(now)
    dd if="$src" of=/dev/null bs=4M count="$n" status=none || return 0
    t1=$(now)
    dd if="$src" of="$GDIR/ddw" bs=4M count="$n" status=none || return 0
    t2=$(now)
    rm -f "$GDIR/ddw"
    r=$(awk -v m="$mib" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", m / (b - a)}')
    w=$(awk -v m="$mib" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
      t = (c - b) - (b - a); if (t > 0) printf "%.2f", m / t; else print 0 }')
    rb=$(awk -v x="$r" -v y="$rb" 'BEGIN {print (x > y) ? x : y}')
    wb=$(awk -v x="$w" -v y="$wb" 'BEGIN {print (x > y) ? x : y}')
  done
  res filerate read_mib "$rb"
  res filerate write_mib "$wb"
  echo "bench[a]: tmpfs with 4 MiB blocks: read $rb MiB/s, write $wb MiB/s"
}

# run_timed STEP CMD...: runs CMD with a timeout, logs, records rc and wall time.
run_timed() {
  local step=$1 lg="$S/log/$1-a.log" t0 t1 rc=0
  shift
  res "$step" cmd "$(printf '%q ' "$@")"
  {
    printf '$'
    printf ' %q' "$@"
    printf '\n'
  } >>"$lg"
  t0=$(now)
  if [ -x /usr/bin/time ]; then
    timeout -k 5 "$STEP_TO" /usr/bin/time -o "$GDIR/time.$step" -f '%M' "$@" >>"$lg" 2>&1 || rc=$?
  else
    timeout -k 5 "$STEP_TO" "$@" >>"$lg" 2>&1 || rc=$?
  fi
  t1=$(now)
  res "$step" rc "$rc"
  res "$step" wall "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')"
  [ -s "$GDIR/time.$step" ] && res "$step" client_maxrss_kb "$(tail -n1 "$GDIR/time.$step")"
  echo "bench[a]: $step: exit $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s"
  [ "$rc" = 124 ] && echo "timed out after ${STEP_TO}s" >>"$lg"
  return "$rc"
}

a_step() {
  local name=$1 kind=$2 mb=$3 extra=$4 ready st port f
  local -a ssh_opts
  ready="$S/ready-$name"
  st=0
  wait_for "$ready" "$STEP_TO" || st=$?
  if [ "$st" != 0 ]; then
    res "$name" error "b never became ready (wait status $st)"
    echo "bench[a]: $name: b not ready (wait status $st)" >&2
    return 1
  fi
  read -r st port <"$ready"
  if [ "$st" != ok ]; then
    res "$name" error "b failed to start the server: $(cat "$ready")"
    echo "bench[a]: $name: server side failed: $(cat "$ready")" >&2
    return 1
  fi
  f=$(src_file "$mb")
  if [ "$kind" = ibw ]; then
    res "$name" bytes "$(($(ibw_iters "$mb") * CHUNK))"
  else
    res "$name" bytes "$((mb * 1048576))"
  fi
  case "$kind" in
    ibw)
      run_timed "$name" ib_write_bw -d rxe0 -s "$CHUNK" -n "$(ibw_iters "$mb")" -F \
        -p "$IBW_PORT" "$RIG_PEER_IP" || return 1
      ;;
    rdcp)
      local -a ck=(--checksum-choice "${extra%%+*}")
      # default: no --checksum-choice (the default integrity, gmac)
      [ "${extra%%+*}" = default ] && ck=()
      # none+lanes2: --lanes 2 (one session over 2 RC QPs, issue 12)
      [ "${extra#*+lanes}" != "$extra" ] && ck+=(--lanes "${extra#*+lanes}")
      # default+threads2: --threads 2 on both sides (a worker beside the loop)
      [ "${extra#*+threads}" != "$extra" ] && ck+=(--threads "${extra#*+threads}")
      run_timed "$name" "$BENCH_RDCP" --json "${ck[@]}" --port "$port" "$f" "$RIG_PEER_IP::bench/" || return 1
      ;;
    nc)
      run_timed "$name" sh -c 'nc -N "$1" "$2" <"$3"' nc "$RIG_PEER_IP" "$port" "$f" || return 1
      ;;
    ssh)
      ssh_opts=(-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes
        -o LogLevel=ERROR -i "$GDIR/ssh/id")
      if [ "$extra" = scp ]; then
        run_timed "$name" scp "${ssh_opts[@]}" -P "$SSH_PORT" "$f" "root@$RIG_PEER_IP:$GDIR/dst/" || return 1
      else
        run_timed "$name" rsync -e "ssh ${ssh_opts[*]} -p $SSH_PORT" "$f" "root@$RIG_PEER_IP:$GDIR/dst/" ||
          return 1
      fi
      ;;
  esac
  return 0
}

# ---------------------------------------------------------------------------
# Guest b: every server, memory sampling, received-file checks.
# ---------------------------------------------------------------------------
guest_b() {
  guest_common
  local st=0 failed=0
  b_digest_rates
  wait_for "$S/a-prepared" "$((120 + BENCH_MB))" || st=$?
  if [ "$st" != 0 ] || [ "$(cat "$S/a-prepared")" != ok ]; then
    echo "bench[b]: a never prepared its data (status $st): $(cat "$S/a-prepared" 2>/dev/null)" >&2
    return 1
  fi
  local name kind mb extra i=0
  while read -r name kind mb extra; do
    i=$((i + 1))
    b_step "$name" "$kind" "$mb" "$extra" "$i" || failed=1
  done <<<"$(steps)"
  [ -n "${SSHD_PID:-}" ] && stop_pid "$SSHD_PID"
  return "$failed"
}

# b_digest_rates: one core's digest rates in this guest (tests/bench:digest_bench, the
# engine's own protect/verify calls, 4 MiB chunks), while a generates its data.
b_digest_rates() {
  local lg="$S/log/digest-b.log"
  res digest nproc "$(nproc)"
  [ -x "${BENCH_DIGEST:-}" ] || {
    res digest error "no digest_bench binary"
    return 0
  }
  timeout 120 "$BENCH_DIGEST" "$BENCH_DIGEST_MB" 4096 >"$lg" 2>&1 || res digest rc "$?"
  # "gmac  protect verify" in GB/s (1e9 B/s) -> MiB/s
  awk '$1 == "gmac" || $1 == "sha256" {
      printf "%s_protect=%.2f\n%s_verify=%.2f\n", $1, $2 * 1e9 / 1048576, $1, $3 * 1e9 / 1048576
    }' "$lg" >>"$S/res/digest.$RIG_ROLE"
}

# b_wait_done STEP: wait for a's client to finish the step.
b_wait_done() {
  local st=0
  wait_for "$S/done-$1" "$((STEP_TO + 30))" || st=$?
  if [ "$st" != 0 ]; then
    res "$1" server_error "a never finished the step (wait status $st)"
    echo "bench[b]: $1: a never finished (wait status $st)" >&2
    return 1
  fi
  return 0
}

# b_check_file STEP MB: size and (optionally) md5 of the received file, then delete it.
b_check_file() {
  local step=$1 mb=$2 f sz sum
  f="$GDIR/dst/src-$mb"
  if [ ! -e "$f" ]; then
    res "$step" received missing
    return 1
  fi
  sz=$(stat -c %s "$f")
  res "$step" received_bytes "$sz"
  if [ "$BENCH_VERIFY" = 1 ] && [ -s "$S/res/md5-$mb" ]; then
    sum=$(md5sum "$f" | cut -d' ' -f1)
    if [ "$sum" = "$(cat "$S/res/md5-$mb")" ]; then res "$step" verify ok; else res "$step" verify MISMATCH; fi
  fi
  rm -f "$f"
  [ "$sz" = "$((mb * 1048576))" ]
}

b_step() {
  local name=$1 kind=$2 mb=$3 extra=$4 idx=$5 lg="$S/log/$1-b.log" pid port st=0
  rm -rf "$GDIR/dst" && mkdir -p "$GDIR/dst"
  case "$kind" in
    ibw)
      ib_write_bw -d rxe0 -s "$CHUNK" -n "$(ibw_iters "$mb")" -F -p "$IBW_PORT" >"$lg" 2>&1 &
      pid=$!
      # Its stdout is block-buffered into the log: wait for its TCP listener instead.
      if ! wait_listen "$IBW_PORT" 30 "$pid"; then
        put "$S/ready-$name" "fail: ib_write_bw server did not start (see $name-b.log)"
        stop_pid "$pid"
        return 1
      fi
      put "$S/ready-$name" "ok $IBW_PORT"
      b_wait_done "$name" || st=1
      wait_exit "$pid" 20 || st=$?
      res "$name" server_rc "$st"
      ;;
    rdcp)
      port=$((18600 + idx))
      rm -f "$GDIR/rdcpd.port"
      local -a dopt=()
      [ "${extra#*+threads}" != "$extra" ] && dopt=(--threads "${extra#*+threads}")
      "$BENCH_RDCPD" --foreground --no-auth --module "bench=$GDIR/dst" --port "$port" \
        --ready-file "$GDIR/rdcpd.port" "${dopt[@]}" >"$lg" 2>&1 &
      pid=$!
      if ! wait_grep "$GDIR/rdcpd.port" "[0-9]" 30 "$pid"; then
        put "$S/ready-$name" "fail: rdcpd did not write its ready file (see $name-b.log)"
        stop_pid "$pid"
        return 1
      fi
      put "$S/ready-$name" "ok $(head -n1 "$GDIR/rdcpd.port")"
      b_wait_done "$name" || st=1
      if kill -0 "$pid" 2>/dev/null; then
        res "$name" vmhwm_kb "$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")"
        res "$name" vmrss_kb "$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")"
        stop_pid "$pid"
      else
        wait "$pid"
        res "$name" server_error "rdcpd exited early (status $?)"
        st=1
      fi
      b_check_file "$name" "$mb" || st=1
      ;;
    nc)
      # plain TCP on the same wire, no integrity, no metadata: the floor of a
      # TCP copy (OpenBSD nc: -l PORT; it exits when a sends EOF with -N)
      port=$((18500 + idx))
      nc -l "$port" >"$GDIR/dst/src-$mb" 2>"$lg" &
      pid=$!
      if ! wait_listen "$port" 10 "$pid"; then
        put "$S/ready-$name" "fail: nc did not listen (see $name-b.log)"
        stop_pid "$pid"
        return 1
      fi
      put "$S/ready-$name" "ok $port"
      b_wait_done "$name" || st=1
      wait_exit "$pid" 20 || st=$?
      b_check_file "$name" "$mb" || st=1
      ;;
    ssh)
      if [ -z "${SSHD_PID:-}" ]; then
        if ! b_start_sshd "$lg"; then
          put "$S/ready-$name" "fail: sshd did not start (see $name-b.log)"
          return 1
        fi
      fi
      put "$S/ready-$name" "ok $SSH_PORT"
      b_wait_done "$name" || st=1
      b_check_file "$name" "$mb" || st=1
      ;;
  esac
  return "$st"
}

b_start_sshd() {
  local lg=$1
  wait_for "$S/client_key.pub" 30 || {
    echo "no client key from a" >>"$lg"
    return 1
  }
  mkdir -p "$GDIR/ssh" /root/.ssh && chmod 700 /root/.ssh || return 1
  cp "$S/client_key.pub" /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys || return 1
  ssh-keygen -q -t ed25519 -N '' -f "$GDIR/ssh/host_ed25519" >>"$lg" 2>&1 || return 1
  /usr/sbin/sshd -D -f /dev/null -o StrictModes=no -o PermitRootLogin=yes -p "$SSH_PORT" \
    -h "$GDIR/ssh/host_ed25519" -o PasswordAuthentication=no -o UsePAM=no \
    -o AuthorizedKeysFile=/root/.ssh/authorized_keys -o PidFile="$GDIR/ssh/sshd.pid" \
    -o "Subsystem=sftp /usr/lib/openssh/sftp-server" -E "$GDIR/ssh/sshd.log" >>"$lg" 2>&1 &
  SSHD_PID=$!
  wait_listen "$SSH_PORT" 10 "$SSHD_PID" && return 0
  cat "$GDIR/ssh/sshd.log" >>"$lg" 2>/dev/null
  stop_pid "$SSHD_PID"
  SSHD_PID=""
  return 1
}

# ---------------------------------------------------------------------------
# Host side: checks, rig run, report.
# ---------------------------------------------------------------------------
# get STEP ROLE KEY: a recorded value, or empty.
get() {
  local f="$DATA/res/$1.$2"
  [ -f "$f" ] || return 0
  awk -F= -v k="$3" '$1 == k {v = substr($0, length(k) + 2)} END {if (v != "") print v}' "$f"
}

# ibw_mib STEP: perftest's "BW average[MB/sec]" (perftest's MB is 2^20 bytes).
ibw_mib() {
  local lg="$DATA/log/$1-a.log"
  [ -f "$lg" ] || return 0
  awk -v c="$CHUNK" '$1 == c && NF >= 5 && $4 ~ /^[0-9.]+$/ {v = $4} END {if (v != "") print v}' "$lg"
}

# wall_mib STEP: file size / wall time, MiB/s (only when the step succeeded).
wall_mib() {
  local rc wall bytes
  rc=$(get "$1" a rc)
  wall=$(get "$1" a wall)
  bytes=$(get "$1" a bytes)
  [ "$rc" = 0 ] && [ -n "$wall" ] && [ -n "$bytes" ] || return 0
  awk -v b="$bytes" -v t="$wall" 'BEGIN {if (t > 0) printf "%.2f", b / 1048576 / t}'
}

# json_num STEP KEY: a number from rdcp's --json line in the step's log.
json_num() {
  local lg="$DATA/log/$1-a.log"
  [ -f "$lg" ] || return 0
  sed -n 's/.*"'"$2"'": \([0-9.eE+-]*\).*/\1/p' "$lg" | tail -n1
}

# data_mib STEP: the data phase: file size / (wall clock - rdcp's startup_seconds).
data_mib() {
  local rc wall bytes su
  rc=$(get "$1" a rc)
  wall=$(get "$1" a wall)
  bytes=$(get "$1" a bytes)
  su=$(json_num "$1" startup_seconds)
  [ "$rc" = 0 ] && [ -n "$wall" ] && [ -n "$bytes" ] && [ -n "$su" ] || return 0
  awk -v b="$bytes" -v t="$wall" -v s="$su" 'BEGIN {if (t > s) printf "%.2f", b / 1048576 / (t - s)}'
}

# median: the median of the numbers on stdin, one per line (nothing for none).
median() {
  sort -g | awk 'NF {v[++n] = $1} END {
    if (n == 0) exit
    if (n % 2) printf "%.3f", v[(n + 1) / 2]; else printf "%.3f", (v[n / 2] + v[n / 2 + 1]) / 2 }'
}

# self_mib STEP: the rate rdcp reported (--json, or its summary line), in MiB/s.
self_mib() {
  local lg="$DATA/log/$1-a.log" r
  [ -f "$lg" ] || return 0
  r=$(json_num "$1" rate_bytes_per_sec)
  if [ -n "$r" ]; then
    awk -v r="$r" 'BEGIN {printf "%.2f", r / 1048576}'
    return 0
  fi
  awk '/ entries, .* in .* s, .*\/s, checksum / {
      for (i = 1; i <= NF; i++) if ($i ~ /\/s,$/) { u = $i; v = $(i - 1) }
    }
    END {
      if (v == "") exit
      f = 1
      if (u ~ /^B\/s/) f = 1 / 1048576
      else if (u ~ /^KiB/) f = 1 / 1024
      else if (u ~ /^GiB/) f = 1024
      printf "%.2f", v * f
    }' "$lg"
}

# ratio A B: A / B to three places.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }

fmt_row() {
  # tool mib ratio note
  local tool=$1 mib=$2 base=$3 note=$4 mb r="-"
  if [ -z "$mib" ]; then
    printf '%-34s %10s %10s %12s  %s\n' "$tool" "-" "-" "-" "$note"
    return
  fi
  mb=$(awk -v m="$mib" 'BEGIN {printf "%.2f", m * 1.048576}')
  [ -n "$base" ] && r=$(ratio "$mib" "$base")
  printf '%-34s %10s %10s %12s  %s\n' "$tool" "$mb" "$mib" "$r" "$note"
  # the chart's data (tests/bench/charts.sh): tool,MiB/s,ratio
  [ -n "${BENCH_CSV:-}" ] && printf '"%s",%s,%s\n' "$tool" "$mib" "$r" >>"$BENCH_CSV"
  return 0
}

# verdict KEY KEY_W TARGET WHAT WHAT_W RATIO...: the median of the KEY=ratio values
# against TARGET ("WHAT: MET (median)"), then KEY_W's median as a note.
verdict() {
  local k=$1 kw=$2 t=$3 what=$4 ww=$5 m
  shift 5
  m=$(printf '%s\n' "$@" | sed -n "s/^$k=//p" | median)
  if [ -z "$m" ]; then
    echo "$what: FAIL (no measurement)"
  else
    echo "$what: $(awk -v r="$m" -v t="$t" 'BEGIN {print (r >= t) ? "MET" : "NOT MET"}') ($m)"
  fi
  m=$(printf '%s\n' "$@" | sed -n "s/^$kw=//p" | median)
  [ -n "$m" ] && echo "  ($ww: median $m)"
  return 0
}

# The default integrity (gmac) against the rig's CPU cap for it, per round and as the
# median. One core's gmac rate in the guest (protect on the sender, verify on the
# receiver; both VMs are the same machine) times the cores a side uses (min(--threads
# default, nproc)), bounded by ib_write_bw, is the cap of a machine whose NIC does the
# wire. On Soft-RoCE the guest's one core also runs the NIC and reads or writes the
# file, so three bounds are printed; the verdict uses the last, the rig's CPU cap:
#   cap      min(ibw, rate x cores)
#   serial   1 / (1/ibw + 1/(rate x cores)): the wire and the tag in turn
#   file     1 / (1/ibw + max(1/protect + 1/read, 1/verify + 1/write) / cores):
#            the wire, the tag and the file's bytes in turn (read and write: dd with
#            4 MiB blocks on the guest's tmpfs, the calls rdcp makes per chunk)
integrity_cap() {
  local p v n r w k b a base mib dmib cap serial fcap
  local -a rw=() rd=()
  p=$(get digest b gmac_protect)
  v=$(get digest b gmac_verify)
  n=$(get digest b nproc)
  r=$(get filerate a read_mib)
  w=$(get filerate a write_mib)
  if [ -z "$p" ] || [ -z "$v" ] || [ -z "$n" ] || [ -z "$r" ] || [ -z "$w" ]; then
    echo "default integrity (gmac) >= $BENCH_CAP_TARGET x CPU cap: FAIL (no digest or file rate: $(get digest b error)$(get digest b rc))"
    return
  fi
  [ "$n" -gt 8 ] && n=8 # rdcp's default --threads: the cores, at most 8
  echo "gmac, one core in the guest (digest_bench, ${BENCH_DIGEST_MB} MiB in 4 MiB chunks): protect $p MiB/s, verify $v MiB/s; $n core(s) per side"
  echo "guest tmpfs, 4 MiB blocks (dd): read $r MiB/s, write $w MiB/s"
  echo
  printf '%-6s %9s %18s %18s %9s %9s %9s %15s %15s\n' round "ibw" "gmac wall/data" "none wall/data" cap serial file "none/ibw w/d" "gmac/file w/d"
  for k in $(seq "$BENCH_ROUNDS"); do
    b=$(ibw_mib "$(ibw_before "$k")")
    a=$(ibw_mib "$(ibw_after "$k")")
    if [ -z "$b" ] || [ -z "$a" ]; then
      echo "round $k: an ib_write_bw run failed"
      continue
    fi
    base=$(awk -v x="$a" -v y="$b" 'BEGIN {printf "%.2f", (x + y) / 2}')
    local s1 s2 nw nd
    s1=$(round_step rdcp_gmac "$k")
    s2=$(round_step rdcp_none "$k")
    mib=$(wall_mib "$s1")
    dmib=$(data_mib "$s1")
    nw=$(wall_mib "$s2")
    nd=$(data_mib "$s2")
    read -r cap serial fcap <<<"$(awk -v P="$p" -v V="$v" -v R="$r" -v W="$w" -v n="$n" -v B="$base" 'BEGIN {
      c = (P < V ? P : V) * n; cap = c < B ? c : B
      ser = 1 / (1 / B + 1 / c)
      s = 1 / P + 1 / R; t = 1 / V + 1 / W; f = 1 / (1 / B + (s > t ? s : t) / n)
      printf "%.2f %.2f %.2f", cap, ser, f }')"
    local rn1="-" rn2="-" rg1="-" rg2="-"
    [ -n "$nw" ] && rn1=$(ratio "$nw" "$base") && rw+=("none_w=$rn1")
    [ -n "$nd" ] && rn2=$(ratio "$nd" "$base") && rw+=("none_d=$rn2")
    [ -n "$mib" ] && rg1=$(ratio "$mib" "$fcap") && rd+=("gmac_w=$rg1")
    [ -n "$dmib" ] && rg2=$(ratio "$dmib" "$fcap") && rd+=("gmac_d=$rg2")
    [ -n "$mib" ] && rd+=("gmac_serial=$(ratio "$mib" "$serial")")
    printf '%-6s %9s %18s %18s %9s %9s %9s %15s %15s\n' "$k" "$base" "${mib:--}/${dmib:--}" "${nw:--}/${nd:--}" \
      "$cap" "$serial" "$fcap" "$rn1/$rn2" "$rg1/$rg2"
  done
  echo "(ibw: mean of the ib_write_bw runs just before and after the round; w = wall clock, d = data phase)"
  echo
  local m2
  verdict none_d none_w "$BENCH_TARGET" \
    "rdcp --checksum-choice none >= $BENCH_TARGET x ib_write_bw, like for like (data phase against perftest's BW average), median over rounds" \
    "wall clock, rdcp's start-up included and ib_write_bw's left out" "${rw[@]}"
  verdict gmac_d gmac_w "$BENCH_CAP_TARGET" \
    "default integrity (gmac) >= $BENCH_CAP_TARGET x the rig's CPU cap (the file bound), data phase, median over rounds" \
    "wall clock against the file bound" "${rd[@]}"
  m2=$(printf '%s\n' "${rd[@]}" | sed -n "s/^gmac_serial=//p" | median)
  [ -n "$m2" ] && echo "  (gmac wall clock against the serial bound without the file, as reported before: median $m2)"
}

mib_of_kb() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }

report() {
  local i1 base s f nm tool note mib self step hwm_big hwm_small
  local -a failed=()
  local k all=() ibws=""
  i1=$(ibw_mib ibw1)
  for s in ibw1 $(for k in $(seq "$BENCH_ROUNDS"); do printf 'ibw_m%s ' "$k"; done) ibw2; do
    mib=$(ibw_mib "$s")
    [ -n "$mib" ] && all+=("$mib") && ibws="$ibws $mib"
  done
  base=$(printf '%s\n' "${all[@]}" | median)
  echo "rdcp benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), git $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$REPO" diff --quiet HEAD -- lib cmd 2>/dev/null || echo ' (lib/cmd modified)')"
  echo "Soft-RoCE rig run2 (QEMU TCG, 1 vCPU per VM), a -> b, file ${BENCH_MB} MiB random, ${BENCH_SMALL_MB} MiB for the memory check"
  [ "${BENCH_RAILS:-1}" = 2 ] && echo "rig.sh --rails 2: rxe0 and rxe1 in each VM (--lanes 2 spreads over both; ib_write_bw runs on rxe0)"
  echo "rdcp: $BENCH_RDCP_ORIG ($BENCH_BIN_INFO)"
  echo "Units: MB/s = 1e6 B/s, MiB/s = 2^20 B/s; ratios are MiB/s over MiB/s. perftest's 'MB/sec' is MiB/s."
  echo "Baseline ib_write_bw for this table = median of its ${#all[@]} runs in this boot:$ibws MiB/s (the rounds below pair each copy with its neighbours)."
  echo "Copy tools: file size / wall clock around the client command (includes start-up and connect)."
  echo
  printf '%-34s %10s %10s %12s  %s\n' "tool" "MB/s" "MiB/s" "x ib_write_bw" "notes"
  printf '%-34s %10s %10s %12s  %s\n' "----" "----" "-----" "-------------" "-----"
  fmt_row "ib_write_bw -s 4194304 (median)" "$base" "$base" "perftest BW average, 1 QP, rxe0"
  while read -r step tool; do
    mib=$(wall_mib "$step")
    note=""
    self=$(self_mib "$step")
    case "$step" in
      rdcp_*)
        [ -n "$self" ] && note="rdcp's own figure $self MiB/s"
        [ -n "$(data_mib "$step")" ] && note="$note; data phase $(data_mib "$step") MiB/s"
        [ -n "$(get "$step" b vmhwm_kb)" ] && note="$note; rdcpd VmHWM $(mib_of_kb "$(get "$step" b vmhwm_kb)") MiB"
        ;;
    esac
    [ -n "$(get "$step" b verify)" ] && note="$note; md5 $(get "$step" b verify)"
    [ -n "$(get "$step" a client_maxrss_kb)" ] && note="$note; client maxrss $(mib_of_kb "$(get "$step" a client_maxrss_kb)") MiB"
    note=${note#; }
    if [ -z "$mib" ] && skipped "$step"; then
      note="skipped (BENCH_ONLY)"
    elif [ -z "$mib" ]; then
      failed+=("$step")
      note="FAILED${note:+; $note}"
    fi
    fmt_row "$tool" "$mib" "$base" "$note"
  done <<EOF
rdcp_none rdcp --checksum-choice none
rdcp_none_lanes2 rdcp --checksum-choice none --lanes 2
rdcp_gmac rdcp (default integrity: gmac)
rdcp_gmac_t2 rdcp (gmac) --threads 2, both sides
rdcp_sha256 rdcp --checksum-choice sha256
rdcp_blake2b512 rdcp --checksum-choice blake2b512
rdcp_none_small rdcp --checksum-choice none (${BENCH_SMALL_MB} MiB)
scp scp
rsync rsync -e ssh
nc nc (plain TCP, no check)
EOF
  for s in ibw1 ibw2 ibw_short $(for k in $(seq "$BENCH_ROUNDS"); do printf 'ibw_m%s ' "$k"; done); do
    [ -n "$(ibw_mib "$s")" ] || skipped "$s" || failed+=("$s")
  done
  echo
  # Cross-check of perftest's cycle-counter timing against the guest's wall clock:
  # the difference of two runs of different length cancels the set-up time.
  local ws wl bs bl
  ws=$(get ibw_short a wall)
  wl=$(get ibw1 a wall)
  bs=$(get ibw_short a bytes)
  bl=$(get ibw1 a bytes)
  if [ -n "$ws" ] && [ -n "$wl" ] && [ "$(get ibw_short a rc)" = 0 ] && [ "$(get ibw1 a rc)" = 0 ]; then
    echo "ib_write_bw wall-clock check: ($((bl / 1048576)) - $((bs / 1048576)) MiB) / (${wl} - ${ws} s) = $(awk -v a="$bl" -v b="$bs" -v x="$wl" -v y="$ws" 'BEGIN {if (x > y && a > b) printf "%.2f", (a - b) / 1048576 / (x - y); else print "n/a"}') MiB/s (perftest said ${i1:-?} and $(ibw_mib ibw_short) MiB/s)"
    echo "ib_write_bw client wall time incl. set-up: $(get ibw1 a wall) s for $((bl / 1048576)) MiB ($(awk -v b="$bl" -v t="$wl" 'BEGIN {printf "%.2f", b / 1048576 / t}') MiB/s end to end)"
  fi
  echo
  integrity_cap
  hwm_big=$(get rdcp_none b vmhwm_kb)
  hwm_small=$(get rdcp_none_small b vmhwm_kb)
  if [ -n "$hwm_big" ] && [ -n "$hwm_small" ]; then
    local d verdict2
    d=$((hwm_big - hwm_small))
    verdict2=$(awk -v d="$d" -v s="$hwm_small" 'BEGIN {
      print (d <= 4096 || d <= s * 0.05) ? "does NOT grow with file size" : "GROWS with file size" }')
    echo "rdcpd peak memory (VmHWM, --checksum-choice none): ${BENCH_SMALL_MB} MiB file $(mib_of_kb "$hwm_small") MiB, ${BENCH_MB} MiB file $(mib_of_kb "$hwm_big") MiB: $verdict2 (diff $(awk -v d="$d" 'BEGIN {printf "%+.1f", d / 1024}') MiB)"
    echo "  VmHWM sha256 $(mib_of_kb "$(get rdcp_sha256 b vmhwm_kb)") MiB, blake2b512 $(mib_of_kb "$(get rdcp_blake2b512 b vmhwm_kb)") MiB (rdcpd default --pool-size 64M per connection)"
  else
    echo "rdcpd peak memory: not measured (big: ${hwm_big:-none}, small: ${hwm_small:-none})"
  fi
  if [ "${#failed[@]}" -gt 0 ]; then
    echo
    echo "FAILED steps: ${failed[*]}"
    for s in "${failed[@]}"; do
      echo "--- $s"
      for nm in a b; do
        f="$DATA/res/$s.$nm"
        [ -f "$f" ] && sed "s/^/  [$nm] /" "$f"
      done
      for nm in a b; do
        f="$DATA/log/$s-$nm.log"
        [ -f "$f" ] && tail -n 15 "$f" | sed "s/^/  [$nm log] /"
      done
    done
  fi
  [ "${#failed[@]}" -eq 0 ]
}

host_main() {
  REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P) || die "cannot find the repo"
  local self="$REPO/tests/bench/bench.sh" out="$REPO/tests/bench/results" c
  BENCH_MB=${BENCH_MB:-256}
  BENCH_ROUNDS=${BENCH_ROUNDS:-5}
  BENCH_SMALL_MB=${BENCH_SMALL_MB:-64}
  BENCH_TARGET=${BENCH_TARGET:-0.95}
  BENCH_CAP_TARGET=${BENCH_CAP_TARGET:-0.9}
  BENCH_DIGEST_MB=${BENCH_DIGEST_MB:-128}
  BENCH_VERIFY=${BENCH_VERIFY:-1}
  if ! [[ "$BENCH_MB" =~ ^[0-9]+$ ]] || [ "$BENCH_MB" -lt 4 ]; then
    log "BENCH_MB must be an integer >= 4"
    exit 2
  fi
  if ! [[ "$BENCH_ROUNDS" =~ ^[1-9][0-9]*$ ]]; then
    log "BENCH_ROUNDS must be an integer >= 1"
    exit 2
  fi
  if ! [[ "$BENCH_SMALL_MB" =~ ^[0-9]+$ ]] || [ "$BENCH_SMALL_MB" -lt 1 ]; then
    log "BENCH_SMALL_MB must be an integer >= 1"
    exit 2
  fi
  [ "$BENCH_SMALL_MB" != "$BENCH_MB" ] || { log "BENCH_SMALL_MB must differ from BENCH_MB"; exit 2; }
  local to=${BENCH_TIMEOUT:-$((240 + 3 * BENCH_MB + 10 * BENCH_ROUNDS * (BENCH_MB / 64 + 1)))}
  [ "$to" -lt 600 ] && [ -z "${BENCH_TIMEOUT:-}" ] && to=600

  for c in qemu-system-x86_64 ib_write_bw ssh scp ssh-keygen rsync md5sum timeout ss awk; do
    command -v "$c" >/dev/null 2>&1 || die "missing '$c' on the host (the guests run the host's binaries)"
  done
  [ -x /usr/sbin/sshd ] || die "missing /usr/sbin/sshd (package openssh-server)"
  [ -x /usr/lib/openssh/sftp-server ] || die "missing /usr/lib/openssh/sftp-server (openssh-sftp-server)"
  [ -r "$REPO/tests/rig/rig.sh" ] || die "missing tests/rig/rig.sh"

  if [ "${BENCH_BUILD:-1}" = 1 ] && [ -z "${BENCH_RDCP:-}" ]; then
    log "bazel build //cmd/..."
    (cd "$REPO" && bazel build //cmd/... //tests/bench:digest_bench >&2) ||
      die "bazel build //cmd/... //tests/bench:digest_bench failed"
  fi
  BENCH_DIGEST=$(readlink -f "${BENCH_DIGEST:-$REPO/bazel-bin/tests/bench/digest_bench}") || true
  BENCH_RDCP=$(readlink -f "${BENCH_RDCP:-$REPO/bazel-bin/cmd/rdcp/rdcp}") || true
  BENCH_RDCPD=$(readlink -f "${BENCH_RDCPD:-$REPO/bazel-bin/cmd/rdcpd/rdcpd}") || true
  [ -x "$BENCH_RDCP" ] || die "no rdcp binary (build with: bazel build //cmd/...)"
  [ -x "$BENCH_RDCPD" ] || die "no rdcpd binary (build with: bazel build //cmd/...)"
  case "$BENCH_RDCP$BENCH_RDCPD$self" in
    /tmp/* | /root/* | /run/* | /var/tmp/*) log "warning: a path is under a guest tmpfs; the guests may not see it" ;;
  esac

  WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdcp-bench.XXXXXX") || die "mktemp"
  trap 'rm -rf "$WORK"' EXIT
  # Freeze the binaries for this run: others may rebuild bazel-bin meanwhile.
  # WORK may sit under a guest tmpfs (/tmp): the rig bind-mounts it via RIG_BINDS.
  BENCH_BIN_INFO="rdcp $(stat -c %y "$BENCH_RDCP" | cut -c1-19), sha256 $(sha256sum "$BENCH_RDCP" | cut -c1-12); rdcpd sha256 $(sha256sum "$BENCH_RDCPD" | cut -c1-12)"
  if ! { mkdir -p "$WORK/bin" && cp "$BENCH_RDCP" "$WORK/bin/rdcp" && cp "$BENCH_RDCPD" "$WORK/bin/rdcpd"; }; then
    die "cannot copy the binaries to $WORK/bin"
  fi
  if [ -x "$BENCH_DIGEST" ]; then
    cp "$BENCH_DIGEST" "$WORK/bin/digest_bench" && BENCH_DIGEST=$WORK/bin/digest_bench
  else
    log "warning: no digest_bench binary: the gmac CPU cap will not be measured"
    BENCH_DIGEST=""
  fi
  BENCH_RDCP_ORIG=$BENCH_RDCP
  BENCH_RDCP=$WORK/bin/rdcp
  BENCH_RDCPD=$WORK/bin/rdcpd
  export RIG_BINDS="${RIG_BINDS:+$RIG_BINDS }$WORK/bin"
  export BENCH_MB BENCH_ROUNDS BENCH_SMALL_MB BENCH_VERIFY BENCH_RDCP BENCH_RDCPD BENCH_STEP_TIMEOUT BENCH_DIGEST BENCH_DIGEST_MB
  [ -n "${BENCH_STEP_TIMEOUT:-}" ] || unset BENCH_STEP_TIMEOUT
  local rig_env="BENCH_MB BENCH_ROUNDS BENCH_SMALL_MB BENCH_VERIFY BENCH_RDCP BENCH_RDCPD BENCH_STEP_TIMEOUT BENCH_DIGEST BENCH_DIGEST_MB BENCH_ONLY"
  log "booting the rig (timeout ${to}s); ${BENCH_MB} MiB file; results at the end (takes a few minutes)"
  local t0=$SECONDS rst=0
  TMPDIR=$WORK RIG_KEEP=1 RIG_ENV="$rig_env" bash "$REPO/tests/rig/rig.sh" run2 --timeout "$to" \
    ${BENCH_RAILS:+--rails "$BENCH_RAILS"} \
    --a "bash $(printf '%q' "$self") --guest a" --b "bash $(printf '%q' "$self") --guest b" \
    >"$WORK/rig.out" 2>"$WORK/rig.err" || rst=$?
  log "rig finished in $((SECONDS - t0)) s with status $rst"
  DATA=$(find "$WORK" -maxdepth 4 -path '*/rdcp-rig.*/share/data' -type d | head -n1)

  mkdir -p "$out" || die "cannot create $out"
  {
    echo "# rig run2 status $rst, $((SECONDS - t0)) s"
    echo "## stdout"
    cat "$WORK/rig.out"
    echo "## stderr"
    cat "$WORK/rig.err"
    if [ -n "$DATA" ]; then
      for c in "$DATA"/log/*.log; do
        [ -f "$c" ] || continue
        echo "## ${c##*/}"
        cat "$c"
      done
      for c in "$DATA"/res/*; do
        [ -f "$c" ] || continue
        echo "## result ${c##*/}"
        cat "$c"
      done
    fi
  } >"$out/latest.log" 2>/dev/null

  if [ -z "$DATA" ] || [ ! -d "$DATA/res" ]; then
    log "the rig produced no results (status $rst); rig output:"
    tail -n 40 "$WORK/rig.err" >&2
    [ "$rst" = 0 ] && rst=125
    exit "$rst"
  fi
  local rep=0
  printf 'tool,mib_s,x_ib_write_bw\n' >"$WORK/big.csv"
  BENCH_CSV=$WORK/big.csv report >"$WORK/report.txt" || rep=1
  if [ "$rst" != 0 ]; then
    {
      echo
      echo "rig status $rst (124 = timeout, 125 = rig failure); its last messages:"
      grep -v -e '^\[[ab]\] bench\[' -e '^rig: kept ' "$WORK/rig.err" | tail -n 20 | sed 's/^/  /'
    } >>"$WORK/report.txt"
    rep=1
  fi
  cp "$WORK/report.txt" "$out/latest.txt"
  cp "$WORK/big.csv" "$out/big.csv"
  meta "bash tests/bench/bench.sh (BENCH_MB=$BENCH_MB, BENCH_ROUNDS=$BENCH_ROUNDS), two-VM Soft-RoCE rig" >"$out/big.meta"
  cat "$WORK/report.txt"
  log "written: $out/latest.txt, $out/big.csv (step logs: $out/latest.log); charts: bash tests/bench/charts.sh"
  exit "$rep"
}

case "${1:-}" in
  --guest)
    PEER=""
    S=""
    BENCH_MB=${BENCH_MB:-256}
    BENCH_ROUNDS=${BENCH_ROUNDS:-5}
    BENCH_SMALL_MB=${BENCH_SMALL_MB:-64}
    BENCH_VERIFY=${BENCH_VERIFY:-1}
    BENCH_DIGEST_MB=${BENCH_DIGEST_MB:-128}
    case "${2:-}" in
      a) guest_a ;;
      b) guest_b ;;
      *) exit 2 ;;
    esac
    ;;
  "") host_main ;;
  -h | --help)
    sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0"
    ;;
  *)
    sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0" >&2
    exit 2
    ;;
esac
