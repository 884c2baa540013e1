#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Puts ndksim's wall-clock speed beside real software fabrics on this machine, loopback only:
# libfabric's fi_pingpong over its shm and tcp providers, UCX's ucx_perftest over shared memory,
# and ndksim-perf on the functional and the default profile. Prints one table per run.
# Usage: scripts/compare-fabrics.sh [--sizes 64,4096] [--iterations N] [--repeat N] [--timeout SECONDS]
#   --sizes       message sizes in bytes, comma-separated (default 64)
#   --iterations  round trips of every ping-pong test (default 10000); streaming tests send 20*N
#   --repeat      runs of every test; the table keeps each one's best (default 3)
#   --timeout     limit on each command run here, in seconds (default 20)
# Installs Debian's libfabric-bin, ucx-utils and iproute2 when missing, and builds ndksim-perf with
# scripts/build.sh only when build/bench/ndksim-perf is missing. Times are wall-clock except the
# column marked "sim", which is ndksim's simulated latency.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes="64"
iterations=10000
limit=20
repeat=3
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes="${2:?--sizes needs a value}"; shift 2 ;;
    --sizes=*) sizes="${1#*=}"; shift ;;
    --iterations) iterations="${2:?--iterations needs a value}"; shift 2 ;;
    --iterations=*) iterations="${1#*=}"; shift ;;
    --timeout) limit="${2:?--timeout needs a value}"; shift 2 ;;
    --timeout=*) limit="${1#*=}"; shift ;;
    --repeat) repeat="${2:?--repeat needs a value}"; shift 2 ;;
    --repeat=*) repeat="${1#*=}"; shift ;;
    -h|--help) sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare-fabrics: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
IFS=',' read -r -a size_list <<<"$sizes"
for s in "${size_list[@]}"; do
  [[ "$s" =~ ^[1-9][0-9]*$ ]] || { echo "compare-fabrics: bad size '$s'" >&2; exit 2; }
done
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || { echo "compare-fabrics: bad --iterations '$iterations'" >&2; exit 2; }
[[ "$limit" =~ ^[1-9][0-9]*$ ]] || { echo "compare-fabrics: bad --timeout '$limit'" >&2; exit 2; }
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "compare-fabrics: bad --repeat '$repeat'" >&2; exit 2; }
stream_iterations=$((iterations * 20))

# The other fabrics' tools, from Debian, installed as scripts/deps.sh installs the build's packages.
packages=(libfabric-bin ucx-utils iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ndksim: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 $sudo apt-get update -qq
  timeout 600 $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

perf="build/bench/ndksim-perf"
if [ ! -x "$perf" ]; then
  dir=$(scripts/build.sh | tail -n 1)
  perf="$dir/bench/ndksim-perf"
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A TCP port on which nothing listens yet, for a server's control connection.
free_port() {
  local port
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 30000))
    [ -z "$(timeout 5 ss -Hltn "sport = :$port")" ] && { echo "$port"; return 0; }
  done
  return 1
}

# Waits until the server (pid $2) listens on port $1; fails if it exits first or takes over 5 s.
wait_listening() {
  for _ in $(seq 100); do
    [ -n "$(timeout 5 ss -Hltn "sport = :$1")" ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# Runs a client/server pair on loopback. $1: a label; $2: the client's output file; the rest: the
# server's command, then "--", then the client's command, in which PORT stands for the port.
# Both run under timeout; the server is given a little longer, as it starts first.
run_pair() {
  local label=$1 out=$2 port rc=0
  shift 2
  port=$(free_port) || { echo "  $label: no free port"; return 1; }
  local server=() client=() arg seen=0
  for arg in "$@"; do
    if [ "$arg" = "--" ]; then seen=1; continue; fi
    [ "$arg" = PORT ] && arg=$port
    if [ $seen -eq 0 ]; then server+=("$arg"); else client+=("$arg"); fi
  done
  timeout $((limit + 5)) "${server[@]}" >"$out.server" 2>&1 &
  server_pid=$!
  if ! wait_listening "$port" "$server_pid"; then
    echo "  $label: the server did not start: $(tail -n 1 "$out.server")"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    return 1
  fi
  timeout "$limit" "${client[@]}" >"$out" 2>&1 || rc=$?
  # A client that failed leaves its server waiting: stop it (timeout passes the signal on).
  [ $rc -ne 0 ] && { kill "$server_pid" 2>/dev/null || true; }
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  if [ $rc -eq 124 ]; then
    echo "  $label: timed out after ${limit}s"
    return 1
  elif [ $rc -ne 0 ]; then
    echo "  $label: failed (exit $rc): $(grep -v '^ *$' "$out" | tail -n 1)"
    return 1
  fi
  return 0
}

# Results, keyed "SIZE/ROW": wall-clock rate (messages per second), one-way wall-clock latency (µs),
# one-way simulated latency (µs).
declare -A rate=() lat=() sim=()
rows=(fi_shm fi_tcp ucx_bw ucx_lat nd_fun_bw nd_fun_lat nd_def_bw nd_def_lat)
declare -A label=(
  [fi_shm]="libfabric shm   fi_pingpong -e rdm"
  [fi_tcp]="libfabric tcp   fi_pingpong -e msg"
  [ucx_bw]="UCX shm         ucp_put_bw"
  [ucx_lat]="UCX shm         ucp_put_lat"
  [nd_fun_bw]="ndksim functional  write bw"
  [nd_fun_lat]="ndksim functional  write lat"
  [nd_def_bw]="ndksim default     write bw"
  [nd_def_lat]="ndksim default     write lat"
)
declare -A kind=(
  [fi_shm]=ping-pong [fi_tcp]=ping-pong [ucx_bw]=stream [ucx_lat]=ping-pong
  [nd_fun_bw]=stream [nd_fun_lat]=ping-pong [nd_def_bw]=stream [nd_def_lat]=ping-pong
)

# Keeps the best of the repeated runs of a row: the highest rate, with its one-way latencies.
keep() {  # KEY SIZE RATE [WALL_ONE_WAY_US [SIM_ONE_WAY_US]]
  [ -n "$3" ] || return 0
  if [ -z "${rate[$2/$1]:-}" ] || awk -v a="$3" -v b="${rate[$2/$1]}" 'BEGIN { exit !(a > b) }'; then
    rate[$2/$1]=$3
    lat[$2/$1]=${4:-}
    sim[$2/$1]=${5:-}
  fi
}

# fi_pingpong's result line: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec, where
# usec/xfer is the elapsed time over every ping and pong (half a round trip) and Mxfers/sec its
# inverse; the rate is taken from usec/xfer, which has more digits.
fabric() {
  local key=$1 provider=$2 endpoint=$3 size=$4 out="$work/$1-$4" line
  local cmd=(fi_pingpong -p "$provider" -e "$endpoint" -I "$iterations" -S "$size")
  echo "  ${cmd[*]} 127.0.0.1:"
  for _ in $(seq "$repeat"); do
    # FI_TCP_IFACE=lo keeps the tcp provider's endpoints on 127.0.0.1 (it would pick eth0's address).
    run_pair "fi_pingpong -p $provider" "$out" env FI_TCP_IFACE=lo "${cmd[@]}" -B PORT \
      -- env FI_TCP_IFACE=lo "${cmd[@]}" -P PORT 127.0.0.1 || continue
    line=$(awk '/usec\/xfer/ { getline; print; exit }' "$out")
    if [ -z "$line" ]; then echo "    no result line"; continue; fi
    echo "    $line"
    keep "$key" "$size" "$(awk '{ if ($(NF - 1) > 0) printf "%.0f", 1e6 / $(NF - 1) }' <<<"$line")" \
      "$(awk '{ print $(NF - 1) }' <<<"$line")"
  done
}

# ucx_perftest's "Final:" line: iterations, latency (or overhead) 50%ile, average, overall, then
# bandwidth average and overall, then message rate average and overall. In a latency test the
# latency is half the round trip and the rate counts pings and pongs.
ucx_ok=""
ucx() {
  local key=$1 test=$2 size=$3 n=$4 out="$work/$1-$3" line one_way
  local cmd=(ucx_perftest -t "$test" -s "$size" -n "$n" -w 1000)
  # Shared-memory transports only (and self): no network transport, so no data leaves the host.
  echo "  UCX_TLS=sm,self ${cmd[*]} 127.0.0.1:"
  for _ in $(seq "$repeat"); do
    run_pair "ucx_perftest -t $test" "$out" env UCX_TLS=sm,self ucx_perftest -p PORT \
      -- env UCX_TLS=sm,self "${cmd[@]}" -p PORT 127.0.0.1 || continue
    line=$(grep '^Final:' "$out" || true)
    if [ -z "$line" ]; then echo "    no Final: line"; continue; fi
    echo "    $line"
    one_way=""
    [ "${kind[$key]}" = ping-pong ] && one_way=$(awk '{ print $5 }' <<<"$line")
    keep "$key" "$size" "$(awk '{ printf "%.0f", $9 }' <<<"$line")" "$one_way"
  done
}

# ndksim-perf's line on stderr: " Simulator speed : R simulated operations per wall-clock second (...)".
# In the latency test a round trip is two operations (ping and pong), so 1/R is the wall-clock
# time of half a round trip. The latency table's row for the size gives t_typical (column 5).
ndksim() {
  local key=$1 phase=$2 size=$3 n=$4 out="$work/$1-$3" rc speed row r
  shift 4
  local cmd=("$perf" --op write -s "$size" -n "$n" --phases "$phase" --no-progress "$@")
  echo "  ${cmd[*]}:"
  for i in $(seq "$repeat"); do
    rc=0
    timeout "$limit" "${cmd[@]}" >"$out" 2>&1 || rc=$?
    if [ $rc -eq 124 ]; then echo "    timed out after ${limit}s"; continue; fi
    if [ $rc -ne 0 ]; then echo "    failed (exit $rc): $(tail -n 1 "$out")"; continue; fi
    speed=$(grep 'Simulator speed' "$out" || true)
    row=$(awk -v s="$size" '$1 == s && NF >= 5 { print; exit }' "$out")
    if [ "$i" -eq 1 ]; then
      echo "    $(grep 'Device (profile)' "$out" | sed 's/^ *//')"
      echo "    ${row# }"
    fi
    echo "   $speed"
    r=$(awk '{ print $4 }' <<<"$speed")
    if [ "$phase" = lat ]; then
      keep "$key" "$size" "$r" "$(awk '{ if ($4 > 0) printf "%.3f", 1e6 / $4 }' <<<"$speed")" \
        "$(awk '{ print $5 }' <<<"$row")"
    else
      keep "$key" "$size" "$r"
    fi
  done
}

echo "compare-fabrics: sizes ${sizes} B, ${iterations} round trips per ping-pong, ${stream_iterations} messages per stream,"
echo "best of $repeat runs each, loopback only"
# Idle cores over half a second, from the first line of /proc/stat (idle and iowait over the total).
before=$(head -n 1 /proc/stat)
sleep 0.5
after=$(head -n 1 /proc/stat)
idle=$(awk -v a="$before" -v b="$after" -v cores="$(nproc)" 'BEGIN { n = split(a, x); split(b, y); total = 0
  for (i = 2; i <= n; i++) total += y[i] - x[i]
  printf "%.1f", (total > 0 ? (y[5] - x[5] + y[6] - x[6]) / total * cores : cores) }')
echo "machine: $(nproc) cores, $idle idle before the run, load average $(cut -d ' ' -f 1-3 /proc/loadavg)"
# The two-process ping-pongs busy-poll on both sides: each needs a core of its own.
if awk -v idle="$idle" 'BEGIN { exit !(idle < 1.8) }'; then
  echo "note: fewer than two idle cores; the two-process ping-pongs (fi_pingpong, ucp_put_lat) wait"
  echo "      for the scheduler here, and their averages say more about this machine than the fabric"
fi
echo "$(timeout 5 fi_info --version | grep '^libfabric:' || true); UCX $(timeout 5 ucx_info -v | awk '/Version/ { print $3; exit }' || true); $(timeout 5 "$perf" --version)"

# UCX runs only where it has a shared-memory transport here.
ucx_transports=$(timeout "$limit" ucx_info -d 2>/dev/null | awk '/Transport:/ { print $3 }' | sort -u | tr '\n' ' ' || true)
if grep -qwE 'posix|sysv' <<<"$ucx_transports"; then
  ucx_ok=1
else
  echo "UCX: no shared-memory transport (posix or sysv) in ucx_info -d (found: ${ucx_transports:-none}); UCX is skipped"
fi

for size in "${size_list[@]}"; do
  echo
  echo "== $size B"
  fabric fi_shm shm rdm "$size"
  fabric fi_tcp tcp msg "$size"
  if [ -n "$ucx_ok" ]; then
    ucx ucx_bw ucp_put_bw "$size" "$stream_iterations"
    ucx ucx_lat ucp_put_lat "$size" "$iterations"
    if [ -z "${rate[$size/ucx_bw]:-}${rate[$size/ucx_lat]:-}" ]; then echo "  UCX could not run here; going on without it"; fi
  fi
  ndksim nd_fun_bw bw "$size" "$stream_iterations" --profile functional
  ndksim nd_fun_lat lat "$size" "$iterations" --profile functional
  ndksim nd_def_bw bw "$size" "$stream_iterations"
  ndksim nd_def_lat lat "$size" "$iterations"
done

# The table. "x ndksim" divides ndksim's functional-profile streaming write rate (writes per
# wall-clock second) by the row's rate; "x same test" divides ndksim's functional-profile rate of
# the same kind of test (stream by stream, ping-pong by ping-pong).
human() { awk -v r="$1" 'BEGIN { if (r == "") print "n/a"; else if (r >= 1e6) printf "%.2fM", r / 1e6;
                                 else if (r >= 1e3) printf "%.1fk", r / 1e3; else printf "%.0f", r }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2fx", a / b }'; }
fixed() { awk -v v="$1" 'BEGIN { if (v == "") print "-"; else printf "%.2f", v }'; }

echo
echo "Wall-clock rates are messages per second (a ping-pong counts pings and pongs); one-way is half"
echo "a round trip. \"x ndksim\": ndksim functional write bw rate / this rate; \"x same test\": ndksim"
echo "functional rate of the same kind of test / this rate. n/a: not measured, for the reason printed above."
printf '%-6s %-34s %-9s %12s %14s %13s %9s %11s\n' size "tool / path" test "rate/s" "one-way µs" "sim one-way" "x ndksim" "x same test"
for size in "${size_list[@]}"; do
  for key in "${rows[@]}"; do
    r=${rate[$size/$key]:-}
    same=nd_fun_lat
    [ "${kind[$key]}" = stream ] && same=nd_fun_bw
    sim_col="-"
    [[ $key == nd_*_lat ]] && sim_col=$(fixed "${sim[$size/$key]:-}")
    printf '%-6s %-34s %-9s %12s %14s %13s %9s %11s\n' "$size" "${label[$key]}" "${kind[$key]}" "$(human "$r")" \
      "$(fixed "${lat[$size/$key]:-}")" "$sim_col" "$(ratio "${rate[$size/nd_fun_bw]:-}" "$r")" \
      "$(ratio "${rate[$size/$same]:-}" "$r")"
  done
done
