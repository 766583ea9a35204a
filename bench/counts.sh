#!/usr/bin/env bash
# Per-request counts of the runtime's costly operations: reference-count retains
# (swift_retain), Swift object allocations (swift_allocObject), malloc calls and mutex locks,
# counted with uprobes (perf) while wrk runs a bounded load through the release build.
#
# Two paths, each against a local nginx origin:
#   hit   — 1 KiB cache hits from a reverse listener (the object is fetched once, then served
#           from the cache);
#   pass  — 1 KiB pass-through on a forward listener (the origin answers no-store).
# Access log off, so the counts are the proxy's own work. Counts are steady from run to run
# (each request does the same work), unlike throughput: the way to see whether a change saved
# allocations or locks.
#
# Needs root (uprobes) and perf (Debian: linux-perf; installed when missing, as root).
# Bounded: DURATION seconds of wrk per path (default 3), 8 connections, loopback only.
# Usage: bash bench/counts.sh [hit|pass ...]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-3}
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(hit pass)

if [ "$(id -u)" != 0 ]; then
  echo "counts.sh needs root (uprobes)" >&2; exit 1
fi
command -v perf >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends linux-perf
}
source bench/common.sh

# The probes. libc's are added once per machine (perf keeps them until reboot). The Swift
# runtime's are on libswiftCore.so for a dynamically linked binary (added once, like libc's), or
# on the binary itself when it links the runtime statically (`make release`): those are set
# afresh each run, under a group of their own, since a rebuild moves the functions.
swiftcore=$(ldd "$TOLLGATE" | awk '/libswiftCore.so/ {print $3}')
libc=$(ldd "$TOLLGATE" | awk '/libc.so.6/ {print $3}')
if [ -n "$swiftcore" ]; then
  perf probe -l 2>/dev/null | grep -q 'probe_libswiftCore:swift_retain ' || perf probe -q -x "$swiftcore" swift_retain
  perf probe -l 2>/dev/null | grep -q 'probe_libswiftCore:swift_allocObject ' || perf probe -q -x "$swiftcore" swift_allocObject
  swiftgroup=probe_libswiftCore
else
  # The runtime's functions are local symbols of the binary, which perf probe does not find by
  # name: they are given as file offsets (address − the executable segment's address + its
  # offset). Event names differ from libswiftCore's (perf wants them unique across groups).
  text=$(readelf -lW "$TOLLGATE" | awk '$1 == "LOAD" && $7 == "R" && $8 == "E" {print $2, $3; exit}')
  offset_of() {
    local address
    address=$(nm "$TOLLGATE" | awk -v f="$1" '$3 == f {print $1; exit}')
    [ -n "$address" ] || { echo "counts.sh: no $1 in $TOLLGATE" >&2; exit 1; }
    set -- $text
    printf '0x%x' $((0x$address - $2 + $1))
  }
  perf probe -q -d 'tollgate_runtime:*' 2>/dev/null || true
  perf probe -q -x "$TOLLGATE" -a "tollgate_runtime:static_swift_retain=$(offset_of swift_retain)"
  perf probe -q -x "$TOLLGATE" -a "tollgate_runtime:static_swift_allocObject=$(offset_of swift_allocObject)"
  swiftgroup=tollgate_runtime
fi
perf probe -l 2>/dev/null | grep -q 'probe_libc:malloc ' || perf probe -q -x "$libc" malloc
perf probe -l 2>/dev/null | grep -q 'probe_libc:pthread_mutex_lock ' || perf probe -q -x "$libc" pthread_mutex_lock
if [ "$swiftgroup" = tollgate_runtime ]; then
  events="tollgate_runtime:static_swift_retain,tollgate_runtime:static_swift_allocObject"
else
  events="probe_libswiftCore:swift_retain,probe_libswiftCore:swift_allocObject"
fi
events="$events,probe_libc:malloc,probe_libc:pthread_mutex_lock"

cat > "$work/origin.conf" <<EOF
worker_processes 1;
pid $work/origin.pid;
error_log $work/origin-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  server {
    listen 127.0.0.1:18190;
    root $work;
    location /nostore/ { alias $work/; add_header Cache-Control no-store; }
    location / { add_header Cache-Control max-age=3600; }
  }
}
EOF
head -c 1024 /dev/urandom > "$work/1k.bin"
"$NGINX" -c "$work/origin.conf"
wait_for_port 18190

cat > "$work/tollgate.yaml" <<EOF
listen:
  - address: "127.0.0.1:18191"
    mode: forward
  - address: "127.0.0.1:18192"
    mode: reverse
    upstream: "http://127.0.0.1:18190"
cache:
  path: "$work/cache"
log:
  access: "off"
EOF
taskset -c 0 "$TOLLGATE" serve --config "$work/tollgate.yaml" > "$work/tollgate.out" 2>&1 &
proxy=$!
pids+=("$proxy")
wait_for_port 18191
wait_for_port 18192
forward_lua
export TARGET=http://127.0.0.1:18190/nostore/1k.bin

echo "| path | requests | retains/request | Swift allocations/request | mallocs/request | mutex locks/request |"
echo "|---|---|---|---|---|---|"
for path in "${paths[@]}"; do
  case $path in
    hit)
      curl -s -o /dev/null http://127.0.0.1:18192/1k.bin
      args=(http://127.0.0.1:18192/1k.bin) ;;
    pass)
      args=(-s "$work/forward.lua" http://127.0.0.1:18191) ;;
    *) echo "unknown path $path (hit, pass)" >&2; exit 2 ;;
  esac
  perf stat -x, -e "$events" -p "$proxy" -o "$work/stat.csv" &
  stat=$!
  sleep 0.3
  taskset -c 1 wrk -t1 -c8 -d"${DURATION}s" "${args[@]}" > "$work/wrk.out"
  kill -INT "$stat"; wait "$stat" || true
  n=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  awk -F, -v n="$n" -v path="$path" '
    /swift_retain/ {r=$1} /swift_allocObject/ {a=$1} /malloc/ {m=$1} /pthread_mutex_lock/ {l=$1}
    END { printf "| %s | %d | %.1f | %.1f | %.1f | %.1f |\n", path, n, r/n, a/n, m/n, l/n }' "$work/stat.csv"
done
