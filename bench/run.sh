#!/usr/bin/env bash
# Pass-through benchmark: wrk against an nginx origin directly, and through Tollgate's release
# build in forward and reverse mode, for 1 KiB and 256 KiB objects, with keep-alive and with a new
# connection per request. Tollgate is pinned to core 0 and wrk to core 1 (taskset), the origin to
# core 2 when there is one (ORIGIN_CPU). For reference, the same requests also go through nginx as
# a reverse proxy (proxy_pass with upstream keep-alive, pinned to core 0 like Tollgate): what a
# mature C proxy reaches on this machine.
#
# Then the target's row (1 KiB keep-alive: direct, proxy_pass, forward) again in TARGET_ROUNDS
# rounds (default 3), the order rotating, summarized by medians, together with the most any
# SwiftNIO proxy can reach on this machine: bench/relay, a byte relay that does no HTTP work at
# all, pinned to core 0 like Tollgate.
#
# Every run is bounded: DURATION seconds each (default 10), loopback only.
# Results: a Markdown table on stdout and in bench/results/passthrough-DATE.md.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-32}
ORIGIN_PORT=${ORIGIN_PORT:-18080}
FORWARD_PORT=${FORWARD_PORT:-13128}
REVERSE_PORT=${REVERSE_PORT:-13129}
NGINX_PROXY_PORT=${NGINX_PROXY_PORT:-18081}
# Extra rounds of the target's row (1 KiB keep-alive: direct, proxy_pass, nio_relay, forward),
# summarized by medians; 0 leaves them out.
TARGET_ROUNDS=${TARGET_ROUNDS:-3}
RELAY_PORT=${RELAY_PORT:-13130}
# With the origin unpinned, the target rounds again with the origin moved beside wrk (yes/no).
BESIDE_WRK=${BESIDE_WRK:-yes}
# The origin's core: with three cores or more it gets core 2 to itself (set ORIGIN_CPU="" to leave
# it unpinned); on two it is unpinned, and where the scheduler runs it moves a round by 10–25 %.
if [ -z "${ORIGIN_CPU+set}" ]; then
  ORIGIN_CPU=""
  [ "$(nproc)" -ge 3 ] && ORIGIN_CPU=2
fi

source bench/common.sh

mkdir -p "$work/www"
head -c 1024 /dev/urandom > "$work/www/1k.bin"
head -c $((256 * 1024)) /dev/urandom > "$work/www/256k.bin"
nginx_conf nginx <<NGINX
  server {
    listen 127.0.0.1:$ORIGIN_PORT;
    root $work/www;
    # Pass-through: nothing may be answered from Tollgate's cache (bench/cache.sh measures hits).
    add_header Cache-Control "no-store";
  }
NGINX
origin_placement=unpinned
if [ -n "$ORIGIN_CPU" ]; then
  origin_placement="pinned to core $ORIGIN_CPU"
  taskset -c "$ORIGIN_CPU" "$NGINX" -c "$work/nginx.conf" -p "$work"
else
  "$NGINX" -c "$work/nginx.conf" -p "$work"
fi
nginx_conf nginx-proxy <<NGINX
  upstream origin { server 127.0.0.1:$ORIGIN_PORT; keepalive 64; }
  server {
    listen 127.0.0.1:$NGINX_PROXY_PORT;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
NGINX
taskset -c 0 "$NGINX" -c "$work/nginx-proxy.conf" -p "$work"

wait_for_port "$ORIGIN_PORT"
wait_for_port "$NGINX_PROXY_PORT"

taskset -c 0 "$TOLLGATE" serve --listen "127.0.0.1:$FORWARD_PORT" >"$work/forward.log" 2>"$work/forward.err" &
pids+=($!)
forward_pid=$!
wait_for_port "$FORWARD_PORT"
reverse=no
if "$TOLLGATE" serve --help 2>&1 | grep -q -- "--reverse"; then
  taskset -c 0 "$TOLLGATE" serve --listen "127.0.0.1:$REVERSE_PORT" --reverse "http://127.0.0.1:$ORIGIN_PORT" \
    >"$work/reverse.log" 2>"$work/reverse.err" &
  pids+=($!)
  reverse_pid=$!
  wait_for_port "$REVERSE_PORT"
  reverse=yes
fi

relay_pid=""
if [ "$TARGET_ROUNDS" -gt 0 ]; then
  swift build --package-path bench/relay "${release_flags[@]}" >/dev/null
  relay=$(swift build --package-path bench/relay "${release_flags[@]}" --show-bin-path)/nio-relay
  taskset -c 0 "$relay" "$RELAY_PORT" "$ORIGIN_PORT" >"$work/relay.log" 2>&1 &
  pids+=($!)
  relay_pid=$!
  wait_for_port "$RELAY_PORT"
fi

forward_lua

origin_pid=$(nginx_worker nginx)
nginx_proxy_pid=$(nginx_worker nginx-proxy)

# Prints "requests/s p50 p99 non-2xx user-us sys-us" for one wrk run, the CPU being that of `pid`.
run() { # pid url [lua] [close] [absolute target for the forward proxy]
  export TARGET=${5:-}
  local pid=$1
  local args=(-t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency)
  [ -n "${3:-}" ] && args+=(-s "$3")
  [ "${4:-}" = close ] && args+=(-H "Connection: close")
  wrk_measured "$pid" "${args[@]}" "$2" | awk '{print $1, $3, $4, $5, $6, $7}'
}

# wrk's latency ("751.00us", "1.36ms", "2.00s") in microseconds.
microseconds() {
  awk -v t="$1" 'BEGIN {
    v = t + 0
    if (t ~ /us$/) print v; else if (t ~ /ms$/) print v * 1000; else if (t ~ /s$/) print v * 1000000; else print v
  }'
}

# A as a whole percentage of B (0 when B is 0).
percent() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f", (b > 0 ? a * 100 / b : 0)}'; }

# The target (1 KiB keep-alive: at least 50 % of direct throughput, at most 2× its p99) in
# TARGET_ROUNDS rounds, the order of the paths rotating from round to round: where the unpinned
# origin runs is up to the scheduler, and one run's share moves by 5–10 points with it.
target_rounds() { # heading
  echo
  echo "Target rows, $1: 1 KiB keep-alive, $TARGET_ROUNDS rounds of ${DURATION}s, the order of the paths rotating."
  echo "nio_relay is bench/relay: SwiftNIO copying bytes between a client connection and its own"
  echo "upstream connection, no HTTP work — the most any SwiftNIO proxy can reach here."
  echo
  echo "| round | path | requests/s | p99 | share of direct | p99 / direct p99 | CPU user | CPU system |"
  echo "|---|---|---|---|---|---|---|---|"
  paths=(direct proxy_pass nio_relay forward)
  declare -A shares ratios of_relay
  for round in $(seq 1 "$TARGET_ROUNDS"); do
    declare -A rps_of p99_of user_of sys_of
    for i in 0 1 2 3; do
      path=${paths[$(((i + round - 1) % 4))]}
      case $path in
        direct) read -r rps _ p99 _ user sys < <(run "$origin_pid" "http://127.0.0.1:$ORIGIN_PORT/1k.bin") ;;
        proxy_pass) read -r rps _ p99 _ user sys < <(run "$nginx_proxy_pid" "http://127.0.0.1:$NGINX_PROXY_PORT/1k.bin") ;;
        # The relay passes the absolute-form request line on unchanged; nginx accepts it.
        nio_relay) read -r rps _ p99 _ user sys < <(run "$relay_pid" "http://127.0.0.1:$RELAY_PORT" "$work/forward.lua" "" "http://127.0.0.1:$ORIGIN_PORT/1k.bin") ;;
        forward) read -r rps _ p99 _ user sys < <(run "$forward_pid" "http://127.0.0.1:$FORWARD_PORT" "$work/forward.lua" "" "http://127.0.0.1:$ORIGIN_PORT/1k.bin") ;;
      esac
      rps_of[$path]=$rps; p99_of[$path]=$(microseconds "$p99"); user_of[$path]=$user; sys_of[$path]=$sys
    done
    for path in "${paths[@]}"; do
      share=$(percent "${rps_of[$path]}" "${rps_of[direct]}")
      ratio=$(awk -v a="${p99_of[$path]}" -v b="${p99_of[direct]}" 'BEGIN {printf "%.1f", (b > 0 ? a / b : 0)}')
      shares["$path $round"]=$share; ratios["$path $round"]=$ratio
      of_relay["$path $round"]=$(percent "${rps_of[$path]}" "${rps_of[nio_relay]}")
      echo "| $round | $path | ${rps_of[$path]} | ${p99_of[$path]}us | $share % | $ratio× | ${user_of[$path]} | ${sys_of[$path]} |"
    done
    unset rps_of p99_of user_of sys_of
  done
  echo
  echo "| path | median share of direct | median p99 / direct p99 | median share of nio_relay |"
  echo "|---|---|---|---|"
  for path in proxy_pass nio_relay forward; do
    s=(); r=(); v=()
    for round in $(seq 1 "$TARGET_ROUNDS"); do
      s+=("${shares["$path $round"]}"); r+=("${ratios["$path $round"]}"); v+=("${of_relay["$path $round"]}")
    done
    echo "| $path | $(median "${s[@]}") % | $(median "${r[@]}")× | $(median "${v[@]}") % |"
  done
  unset shares ratios of_relay
}

mkdir -p bench/results
out="bench/results/passthrough-$(date +%Y%m%d-%H%M%S).md"
{
  echo "# Pass-through, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)."
  echo "wrk: 1 thread, $CONNECTIONS connections, ${DURATION}s per run, pinned to core 1; Tollgate, the nginx proxy${relay_pid:+ and the relay} pinned to core 0; the nginx origin $origin_placement."
  echo
  echo "CPU: user and system time per request (µs) of the process serving the path: the origin's"
  echo "worker for direct, the proxy's own process otherwise (the origin's share is not included)."
  echo
  echo "| object | connection | path | requests/s | p50 | p99 | non-2xx | CPU user | CPU system |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for object in 1k.bin 256k.bin; do
    for mode in keep-alive close; do
      close=""; [ "$mode" = close ] && close=close
      read -r rps p50 p99 bad user sys < <(run "$origin_pid" "http://127.0.0.1:$ORIGIN_PORT/$object" "" "$close")
      echo "| $object | $mode | direct | $rps | $p50 | $p99 | $bad | $user | $sys |"
      read -r rps p50 p99 bad user sys < <(run "$nginx_proxy_pid" "http://127.0.0.1:$NGINX_PROXY_PORT/$object" "" "$close")
      echo "| $object | $mode | nginx proxy_pass | $rps | $p50 | $p99 | $bad | $user | $sys |"
      read -r rps p50 p99 bad user sys < <(run "$forward_pid" "http://127.0.0.1:$FORWARD_PORT" "$work/forward.lua" "$close" "http://127.0.0.1:$ORIGIN_PORT/$object")
      echo "| $object | $mode | forward | $rps | $p50 | $p99 | $bad | $user | $sys |"
      if [ "$reverse" = yes ]; then
        read -r rps p50 p99 bad user sys < <(run "$reverse_pid" "http://127.0.0.1:$REVERSE_PORT/$object" "" "$close")
        echo "| $object | $mode | reverse | $rps | $p50 | $p99 | $bad | $user | $sys |"
      fi
    done
  done

  if [ "$TARGET_ROUNDS" -gt 0 ]; then
    target_rounds "the origin $origin_placement"
    # On two cores an unpinned origin shares the proxy's core whenever the scheduler puts it there.
    # The same rounds with the origin beside wrk on core 1 give the proxy core 0 to itself, as a
    # third core would: rounds then move by ±1 % instead of ±10 %.
    if [ "$BESIDE_WRK" = yes ] && [ -z "$ORIGIN_CPU" ]; then
      taskset -p -c 1 "$origin_pid" >/dev/null  # the worker serves; the master only waits
      origin_placement="pinned to core 1, beside wrk"
      target_rounds "the origin $origin_placement"
    fi
  fi
} | tee "$out"
echo "written: $out"
