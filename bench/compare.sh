#!/usr/bin/env bash
# CPU per request of two Tollgate builds side by side, for changes whose cost must stay put (a
# refactor's "within 3 %"): a 1 KiB cache hit on a reverse listener and a 1 KiB pass-through
# (the origin answers no-store) on a forward listener. Each build serves both paths; ROUNDS rounds
# alternate which build goes first; the summary gives the median user+system µs per request of each
# and the new build's change. CPU per request is steadier than throughput on a shared machine.
#
# Usage: BASE=/path/to/old/tollgate bash bench/compare.sh [NEW]   (NEW: default the release build)
# The proxies on core 0, wrk and the nginx origin on core 1; loopback only; DURATION (default 5)
# seconds of wrk per run, 32 connections. Needs nginx and wrk (installed when missing, as root).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BASE:?BASE=/path/to/the/old/tollgate binary}"
DURATION=${DURATION:-5}
CONNECTIONS=${CONNECTIONS:-32}
ROUNDS=${ROUNDS:-5}
ORIGIN_PORT=${ORIGIN_PORT:-18280}
[ $# -gt 0 ] && TOLLGATE=$1
source bench/common.sh
NEW=$TOLLGATE

mkdir -p "$work/www"
head -c 1024 /dev/urandom > "$work/www/1k.bin"
nginx_conf origin <<NGINX
  server {
    listen 127.0.0.1:$ORIGIN_PORT;
    root $work/www;
    location /hit/ { alias $work/www/; add_header Cache-Control "max-age=3600"; }
    location /pass/ { alias $work/www/; add_header Cache-Control "no-store"; }
  }
NGINX
taskset -c 1 "$NGINX" -c "$work/origin.conf" -p "$work"
wait_for_port "$ORIGIN_PORT"

# Starts BINARY with a reverse and a forward listener on PORT and PORT+1 (its pid in `pids`, so
# the cleanup stops it, and in `started`), and warms the hit path.
start() { # name binary port
  mkdir -p "$work/$1-cache"
  cat > "$work/$1.yaml" <<YAML
listen:
  - address: "127.0.0.1:$3"
    mode: reverse
    upstream: "http://127.0.0.1:$ORIGIN_PORT"
  - address: "127.0.0.1:$(($3 + 1))"
cache:
  path: "$work/$1-cache"
log:
  access: off
YAML
  taskset -c 0 "$2" serve --config "$work/$1.yaml" >"$work/$1.out" 2>"$work/$1.err" &
  pids+=($!)
  wait_for_port "$3"
  wait_for_port "$(($3 + 1))"
  curl -s -o /dev/null "http://127.0.0.1:$3/hit/1k.bin"; sleep 0.3
  started=${pids[-1]}
}
forward_lua
start base "$BASE" 13300; base_pid=$started
start new "$NEW" 13310; new_pid=$started

declare -A cpu  # "build path" -> list of µs
for round in $(seq 1 "$ROUNDS"); do
  order=(base new); [ $((round % 2)) -eq 0 ] && order=(new base)
  for build in "${order[@]}"; do
    pid=$base_pid; port=13300; [ "$build" = new ] && { pid=$new_pid; port=13310; }
    read -r rps _ _ _ bad user sys < <(wrk_measured "$pid" -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "http://127.0.0.1:$port/hit/1k.bin")
    cpu["$build hit"]+="$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') "
    echo "round $round $build hit: $rps req/s, user $user µs, system $sys µs, non-2xx $bad" >&2
    read -r rps _ _ _ bad user sys < <(TARGET="http://127.0.0.1:$ORIGIN_PORT/pass/1k.bin" \
      wrk_measured "$pid" -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$work/forward.lua" "http://127.0.0.1:$((port + 1))")
    cpu["$build pass"]+="$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') "
    echo "round $round $build pass: $rps req/s, user $user µs, system $sys µs, non-2xx $bad" >&2
  done
done
echo "| path | base (median µs/request) | new (median µs/request) | change |"
echo "|---|---|---|---|"
for path in hit pass; do
  # shellcheck disable=SC2086
  b=$(median ${cpu["base $path"]}); n=$(median ${cpu["new $path"]})
  echo "| 1 KiB $path | $b | $n | $(awk -v b="$b" -v n="$n" 'BEGIN {printf "%+.1f %%", (n - b) * 100 / b}') |"
done
