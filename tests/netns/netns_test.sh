#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Several hosts for real: four network namespaces, each a "host" with an address of its own on a
# documentation subnet, joined by a bridge that lives in a fifth namespace (never the root one);
# one ditask launcher with 2 workers in each, as a four-machine DI-engine run is started:
#   1. --attach-to lists, --node-ids, --world-size 8, a non-loopback --address, --token: every node
#      hears every other;
#   2. the same job with SIGKILL to one host's launcher: the others log its nodes leaving and go on,
#      then stop gracefully on SIGTERM;
#   3. the same job formed by --rendezvous, with no --attach-to at all;
#   4. the same job started by a simulated Slurm (SLURM_* per namespace, host names mapped by a
#      hosts file of the test's own);
#   5. 4 hosts x 64 workers, one job of 256 over one relaying star whose hub is node 0 on host 1
#      (bench_mesh's scale entry): every worker ready, the last one's broadcast reaches each of the
#      255 others exactly once, a spoke keeps a handful of descriptors. Skipped in a sanitizer
#      build (--sanitizers, from DITASK_SANITIZE): 256 instrumented workers need several GB.
# Safety, without exception: the test subnet is the first of TEST-NET-1/2/3 (192.0.2.0/24,
# 198.51.100.0/24, 203.0.113.0/24) that nothing but the default route covers in the root namespace
# (`ip route show match`); `ip route replace unreachable <subnet>` goes into the root namespace
# before any namespace exists and is removed on exit (a trap); every connection is made from inside
# a namespace. Exits 77 (CTest: skipped) where namespaces cannot be created (not root, no ip).
#   netns_test.sh --ditask BIN --modules DIR --work DIR [--sanitizers LIST]
set -uo pipefail

ditask="" modules="" work="" sanitizers=""
while (($#)); do
  case "$1" in
    --ditask) ditask="$2"; shift 2 ;;
    --modules) modules="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --sanitizers) sanitizers="$2"; shift 2 ;;
    *) echo "netns_test: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$ditask" && -d "$modules" && -n "$work" ]] || { echo "netns_test: bad arguments" >&2; exit 2; }

skip() { echo "netns_test: SKIPPED: $*"; exit 77; }
[[ $EUID -eq 0 ]] || skip "network namespaces need root"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"

tag="dt$$"
bridge="${tag}b"
hosts=("${tag}h1" "${tag}h2" "${tag}h3" "${tag}h4")
subnet=""
guarded=0
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill -KILL "$pid" 2>/dev/null
  done
  for ns in "${hosts[@]}" "$bridge"; do
    ip netns del "$ns" 2>/dev/null
  done
  if ((guarded)); then
    ip route del unreachable "$subnet.0/24" 2>/dev/null
  fi
}
trap cleanup EXIT

ip netns add "${tag}probe" 2>/dev/null || skip "ip netns add failed (no permission for network namespaces here)"
# exec makes a mount namespace and remounts / as a slave: not possible in a chroot (where / is no
# mount point) or an unprivileged container.
if ! said="$(ip netns exec "${tag}probe" true 2>&1)"; then
  ip netns del "${tag}probe"
  skip "ip netns exec fails here (${said%%$'\n'*}): a chroot or a container without mount namespaces"
fi
ip netns del "${tag}probe"

# The subnet: covered by nothing but the default route, so the guard below cannot cut off a
# network this machine uses (here TEST-NET-1 may be the machine's own LAN).
for candidate in 192.0.2 198.51.100 203.0.113; do
  routes="$(ip route show match "$candidate.1" | grep -v '^default ' || true)"
  if [[ -z "$routes" ]]; then
    subnet="$candidate"
    break
  fi
  echo "netns_test: not $candidate.0/24, a route of this machine covers it: $routes"
done
[[ -n "$subnet" ]] || skip "every documentation subnet is in use on this machine"
# A connection to the subnet from the root namespace would follow the default route off the
# machine: make the kernel refuse it, before the namespaces exist.
ip route replace unreachable "$subnet.0/24" || skip "cannot add the unreachable guard route"
guarded=1
echo "netns_test: test subnet $subnet.0/24 (unreachable from the root namespace)"

ip netns add "$bridge"
ip -n "$bridge" link add br0 type bridge
ip -n "$bridge" link set br0 up
for i in 1 2 3 4; do
  ns="${hosts[$((i - 1))]}"
  ip netns add "$ns"
  # The pair is created inside the host's namespace, its peer moved straight into the bridge's.
  ip -n "$ns" link add eth0 type veth peer name "vb$i" netns "$bridge"
  ip -n "$ns" addr add "$subnet.$i/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  ip -n "$bridge" link set "vb$i" master br0
  ip -n "$bridge" link set "vb$i" up
done

failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
token="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
mesh=(--package "$modules/libmesh_tests.so" --parallel-workers 2 --token "$token" --startup-timeout 30)

# start HOST NAME ARGS...: one launcher in host HOST's namespace (with the variables of the
# array launch_env, and --timeout $launch_timeout), output in $work/NAME-HOST.log
launch_env=()
launch_timeout=100
start() {
  local i="$1" name="$2"
  shift 2
  # ip and env exec what follows: $! is the launcher's own pid. Its --timeout bounds a hang.
  ip netns exec "${hosts[$((i - 1))]}" env "${launch_env[@]}" "$ditask" --timeout "$launch_timeout" "$@" >"$work/$name-$i.log" 2>&1 &
  pids+=($!)
}
wait_lines() {  # wait_lines PATTERN COUNT SECONDS FILES...: COUNT matching lines in all FILES
  local pattern="$1" count="$2" deadline=$((SECONDS + $3))
  shift 3
  while ((SECONDS < deadline)); do
    (($(cat "$@" 2>/dev/null | grep -c -- "$pattern") >= count)) && return 0
    sleep 0.1  # another process's output has no notification: look again, within the bound
  done
  return 1
}
attach_of() {  # the workers of the hosts below host $1
  local i="$1" j list=""
  for ((j = 1; j < i; ++j)); do
    list+="${list:+,}tcp://$subnet.$j:7100,tcp://$subnet.$j:7101"
  done
  echo "$list"
}
# check_heard NAME: every node 0-7 printed a RESULT with the 7 others.
check_heard() {
  local name="$1" n others good=1
  for n in 0 1 2 3 4 5 6 7; do
    others="$(seq 0 7 | grep -vx "$n" | paste -sd,)"
    grep -qx "\[node $n\] RESULT peers=$others pings_from=$others" "$work/$name"-*.log || good=0
  done
  ((good))
}
run_all() {  # run_all NAME: waits for the 4 launchers started as NAME; true when all exited 0
  local rc=0 pid
  for pid in "${pids[@]}"; do
    wait "$pid" || rc=1
  done
  pids=()
  return $rc
}

rm -rf "$work"
mkdir -p "$work"

# 1. --attach-to, --node-ids, --world-size 8, --address, --token
for i in 1 2 3 4; do
  attach="$(attach_of "$i")"
  start "$i" attach "${mesh[@]}" --main ping --node-ids $((2 * (i - 1))) --world-size 8 --address "$subnet.$i" \
    --ports 7100 --topology mesh ${attach:+--attach-to "$attach"}
done
if run_all attach && check_heard attach; then
  ok "4 hosts x 2 workers with --attach-to: every node heard the 7 others"
else
  fail "--attach-to job"; tail -n 20 "$work"/attach-*.log
fi

# 2. a host's launcher killed: reported on the others, whose job goes on
for i in 1 2 3 4; do
  attach="$(attach_of "$i")"
  start "$i" kill "${mesh[@]}" --main graceful --node-ids $((2 * (i - 1))) --world-size 8 --address "$subnet.$i" \
    --ports 7100 --topology mesh ${attach:+--attach-to "$attach"}
done
if wait_lines "READY peers=" 8 60 "$work"/kill-{1,2,3,4}.log; then
  kill -KILL "${pids[3]}"
  left_ok=1
  for i in 1 2 3; do
    for node in 6 7; do
      wait_lines "LEFT $node:connection lost" 2 30 "$work/kill-$i.log" || left_ok=0
    done
    grep -q "node 6 (tcp://$subnet.4:7100) left (connection lost" "$work/kill-$i.log" || left_ok=0
  done
  alive=1
  for k in 0 1 2; do
    kill -0 "${pids[$k]}" 2>/dev/null || alive=0
  done
  if ((left_ok && alive)); then
    ok "SIGKILL of host 4's launcher: hosts 1-3 saw nodes 6 and 7 leave (connection lost) and go on"
  else
    fail "launcher killed: left=$left_ok alive=$alive"; tail -n 20 "$work"/kill-*.log
  fi
  for k in 0 1 2; do
    kill -TERM "${pids[$k]}"
  done
  stopped=1
  for k in 0 1 2; do
    wait "${pids[$k]}"
    (($? == 143)) || stopped=0
  done
  pids=()
  if ((stopped)) && [[ $(cat "$work"/kill-[123].log | grep -c "RESULT stopped gracefully") == 6 ]]; then
    ok "hosts 1-3 then stopped gracefully on SIGTERM (exit 143)"
  else
    fail "graceful stop after the kill"; tail -n 20 "$work"/kill-*.log
  fi
else
  fail "the kill job did not start"; tail -n 20 "$work"/kill-*.log
fi

# 3. a rendezvous at host 1, no --attach-to at all
for i in 1 2 3 4; do
  start "$i" rendezvous "${mesh[@]}" --main ping --node-ids $((2 * (i - 1))) --world-size 8 --address "$subnet.$i" \
    --rendezvous "tcp://$subnet.1:7200" --run-id "netns-$tag"
done
if run_all rendezvous && check_heard rendezvous; then
  ok "4 hosts through --rendezvous tcp://$subnet.1:7200, no --attach-to: every node heard the 7 others"
else
  fail "rendezvous job"; tail -n 20 "$work"/rendezvous-*.log
fi

# 4. a simulated Slurm: SLURM_* per host, the host names in a hosts file of our own
for i in 1 2 3 4; do
  echo "$subnet.$i h$i"
done >"$work/hosts"
for i in 1 2 3 4; do
  launch_env=(SLURM_STEP_NODELIST="h[1-4]" SLURM_STEP_TASKS_PER_NODE="1(x4)" SLURM_STEP_NUM_TASKS=4
              SLURM_PROCID=$((i - 1)) SLURM_LOCALID=0 SLURM_NODEID=$((i - 1)) SLURMD_NODENAME="h$i"
              SLURM_JOB_ID=42 SLURM_STEP_ID=0)
  start "$i" slurm "${mesh[@]}" --main ping --platform slurm --hosts-file "$work/hosts"
done
launch_env=()
if run_all slurm && check_heard slurm; then
  ok "4 hosts as a simulated Slurm step (h[1-4], 1(x4)): every node heard the 7 others"
else
  fail "simulated Slurm job"; tail -n 20 "$work"/slurm-*.log
fi

# 5. 4 hosts x 64 workers: one job of 256 over one relaying star, the hub node 0 on host 1. Host 1
# is the star (--topology star --relay: nodes 1-63 dial node 0); every worker of hosts 2-4 dials
# node 0 alone (--topology alone --attach-to), as a star of their own would make each of them a
# second hub: a spoke would then get both hubs' copies of a broadcast, and a hub does not relay
# what another hub relayed. A hub's start() waits for its own spokes only, so bench_mesh's node 0
# waits until the other 255 joined (WORLD_SIZE) before node 255 broadcasts.
if [[ -n "$sanitizers" ]]; then
  echo "skipped: 4 hosts x 64 workers over one relaying star: a sanitizer build (-fsanitize=$sanitizers), whose 256 instrumented workers need several GB (the debug and release builds run it)"
else
  launch_timeout=420  # 256 processes start on this machine's cores: generous bounds, not sleeps
  scale=(--package "$modules/libbench_mesh.so" --main scale --parallel-workers 64 --world-size 256
         --token "$token" --startup-timeout 300 --ports 7100)
  began=$SECONDS
  for i in 1 2 3 4; do
    if ((i == 1)); then
      shape=(--topology star --relay)
    else
      shape=(--topology alone --attach-to "tcp://$subnet.1:7100")
    fi
    start "$i" scale "${scale[@]}" --node-ids $((64 * (i - 1))) --address "$subnet.$i" "${shape[@]}" -- timeout_s=300 \
      waves=100
  done
  exited=0
  run_all scale && exited=1
  took=$((SECONDS - began))
  launch_timeout=100
  # One line per node: `[node N] bench_mesh scale node=N peers=P ready_us=.. wave_us=W sent_us=S
  # received=R out_of_order=O lost=L dropped=D vmrss_kb=K fds=F`. Node 255 broadcasts 100
  # numbered events: each other node must get all 100, in order (so each exactly once), with
  # nothing lost or dropped. The verdict: lines, distinct nodes, wrong counts, the hub's peers,
  # the largest spoke's descriptors and RSS, the wave's time to its last receiver.
  verdict="$(cat "$work"/scale-{1,2,3,4}.log | awk '
    / bench_mesh scale node=/ {
      for (k = 1; k <= NF; ++k) { split($k, kv, "="); v[kv[1]] = kv[2] }
      n = v["node"] + 0; ++lines
      if (!(n in seen)) { seen[n] = 1; ++nodes }
      if (n < 0 || n > 255) ++bad
      if ((n == 255 && v["received"] != "0") || (n != 255 && v["received"] != "100")) ++wrong
      if (v["out_of_order"] != "0" || v["lost"] != "0" || v["dropped"] != "0") ++wrong
      if (n == 0) hub = v["peers"]
      else {
        if (v["fds"] + 0 > fds) fds = v["fds"] + 0
        if (v["vmrss_kb"] + 0 > rss) rss = v["vmrss_kb"] + 0
      }
      if (v["wave_us"] + 0 > last) last = v["wave_us"] + 0
      if (n == 255) sent = v["sent_us"] + 0
    }
    END { printf "%d %d %d %d %s %d %d %.3f\n", lines, nodes, bad, wrong, (hub == "" ? -1 : hub), fds, rss,
                 (sent > 0 ? (last - sent) / 1e6 : -1) }')"
  read -r lines nodes bad wrong hub fds rss wave <<<"$verdict"
  # A spoke: stdin/out/err, its listening socket, its one link, the io thread's epoll and eventfd,
  # the timer and signal descriptors (scale_test's star bound).
  if ((exited && lines == 256 && nodes == 256 && bad == 0 && wrong == 0 && hub == 255 && fds <= 16)); then
    ok "4 hosts x 64 workers, one job of 256 over a relaying star (hub node 0 on host 1): all 256 ready and the four launchers done in ${took} s; node 255's 100 broadcast events reached each of the 255 others exactly once and in order, none lost or dropped (the first reached the last receiver after ${wave} s), the hub had 255 peers, a spoke at most $fds descriptors and $((rss / 1024)) MB"
  else
    fail "4 hosts x 64 workers: launchers exited 0: $exited, lines $lines/256, nodes $nodes, wrong counts $wrong, hub peers $hub, spoke descriptors up to $fds (at most 16), ${took} s"
    for i in 1 2 3 4; do
      grep -v " bench_mesh scale " "$work/scale-$i.log" | tail -n 10
    done
  fi
fi

if ((failures)); then
  echo "netns tests: $failures failed"
  exit 1
fi
echo "netns tests: all passed"
