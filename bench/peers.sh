#!/usr/bin/env bash
# Issue #29's table: Tollgate beside the peers as their users run them — nginx as a cache (one
# worker, proxy_cache + open_file_cache, sendfile, tcp_nopush, keep-alive in the millions both
# ways, an upstream keep-alive pool) and Apache Traffic Server 9.2 (RAM cache on, cache on disk in
# a temporary directory, one event thread, logging off) — through the same rows, reverse and
# forward. Layout: the proxy under test alone on core 0; wrk (-t1 -c64) and the origin (nginx
# serving files) on core 1. Each row: ROUNDS rounds of DURATION seconds per proxy, the order of
# the proxies rotating between rounds; medians of requests/s, p99 and the proxy's own CPU per
# request (user and system µs, /proc/PID/stat across the run), and the faster peer's CPU per request
# over Tollgate's (the CPU ratio: where a row is bound by the proxy's core, what requests/s say
# too). At the end, each proxy's peak RSS
# over the whole run (VmHWM) and Tollgate's memory by kind (smaps_rollup) and peak after each row.
#
# Usage: bash bench/peers.sh   (or make bench-peers)
#   ROUNDS=3 DURATION=3 ROWS="rh1k rp1k" PROXIES="tollgate ats" TOLLGATE=/path/to/tollgate
#   PERF=1 adds perf record -g profiles of Tollgate on the 1 KiB hit and pass-through rows.
#   CEILING=0 leaves out the SwiftNIO ceiling column (bench/relay: `nio-relay serve` answering the
#   reverse hit rows from memory, the byte relay carrying the reverse pass-through rows): the most
#   any proxy on SwiftNIO does on this machine. It is not a peer: the ratio is against nginx/ATS.
# Rows (ROWS= filters by these names; default all):
#   rh1k rh16k rh256k rh8m   reverse hit          rh1k-close  reverse hit 1 KiB, new connection each
#   rp1k rp8m                reverse pass-through (the origin answers no-store)
#   fh1k fh16k               forward hit          fh1k-close  forward hit 1 KiB, new connection each
#   fp1k                     forward pass-through (nginx has no forward proxy: "—")
# Loopback only; every run is bounded by DURATION. Installs nginx-light, wrk (bench/common.sh) and
# trafficserver when run as root and missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-3}
CONNECTIONS=${CONNECTIONS:-64}
ALL_ROWS="rh1k rh16k rh256k rh8m rh1k-close rp1k rp8m fh1k fh16k fh1k-close fp1k"
ROWS=${ROWS:-$ALL_ROWS}
for row in $ROWS; do
  case " $ALL_ROWS " in *" $row "*) ;; *) echo "unknown row: $row (rows: $ALL_ROWS)" >&2; exit 1 ;; esac
done
ORIGIN_PORT=${ORIGIN_PORT:-18580}
NGINX_PORT=${NGINX_PORT:-18581}
ATS_PORT=${ATS_PORT:-18582}
REVERSE_PORT=${REVERSE_PORT:-18583}
FORWARD_PORT=${FORWARD_PORT:-18584}
CEILING=${CEILING:-1}
NIO_PORT=${NIO_PORT:-18590}  # 18590–18593 serve 1 KiB, 16 KiB, 256 KiB, 8 MiB; 18594 relays

if ! command -v traffic_server >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends trafficserver
  else
    echo "bench/peers.sh needs: sudo apt-get install -y trafficserver" >&2; exit 1
  fi
fi
source bench/common.sh

# The objects: /c/ cacheable for an hour, /n/ the same files with no-store (pass-through rows).
mkdir -p "$work/www" "$work/nginx-cache"
chown www-data "$work/nginx-cache" 2>/dev/null || true
head -c 1024 /dev/urandom > "$work/www/1k.bin"
head -c 16384 /dev/urandom > "$work/www/16k.bin"
head -c $((256 * 1024)) /dev/urandom > "$work/www/256k.bin"
head -c $((8 * 1024 * 1024)) /dev/urandom > "$work/www/8m.bin"
chmod 644 "$work"/www/*

nginx_conf origin <<NGINX
  sendfile on;
  tcp_nopush on;
  open_file_cache max=100 inactive=60s;
  server {
    listen 127.0.0.1:$ORIGIN_PORT;
    location /c/ { alias $work/www/; add_header Cache-Control "max-age=3600"; }
    location /n/ { alias $work/www/; add_header Cache-Control "no-store"; }
  }
NGINX
# nginx as an operator runs a cache (bench/h2.sh has the same, over TLS).
nginx_cache_conf 64 <<NGINX
    listen 127.0.0.1:$NGINX_PORT;
NGINX

# ATS 9.2 from a runroot of its own (TS_RUNROOT): configuration, cache, logs and sockets in the
# work directory; the package's binaries and plugins. One instance is both proxies: the map rule
# makes its port a reverse proxy of the origin, and remap_required 0 lets absolute-form requests
# for other hosts through as a forward proxy.
ats=$work/ats
mkdir -p "$ats/etc" "$ats/run" "$ats/log" "$ats/cache"
cp -r /etc/trafficserver/. "$ats/etc/"
cat > "$ats/runroot.yaml" <<YAML
prefix: $ats
exec_prefix: /usr
bindir: /usr/bin
sbindir: /usr/sbin
sysconfdir: $ats/etc
datadir: $ats/cache
includedir: /usr/include
libdir: /usr/lib/trafficserver
libexecdir: /usr/lib/trafficserver/modules
localstatedir: $ats
runtimedir: $ats/run
logdir: $ats/log
cachedir: $ats/cache
YAML
# One event thread for the one core (its default is 1.5 per core); the RAM cache on (64 MiB,
# objects up to the default 4 MiB); no logs; no Via headers; origin connections shared per thread.
cat > "$ats/etc/records.config" <<ATS
CONFIG proxy.config.exec_thread.autoconfig INT 0
CONFIG proxy.config.exec_thread.limit INT 1
CONFIG proxy.config.accept_threads INT 0
CONFIG proxy.config.task_threads INT 1
CONFIG proxy.config.cache.threads_per_disk INT 4
CONFIG proxy.config.http.server_ports STRING $ATS_PORT
CONFIG proxy.config.http.cache.http INT 1
CONFIG proxy.config.cache.ram_cache.size INT 67108864
CONFIG proxy.config.log.logging_enabled INT 0
CONFIG proxy.config.url_remap.remap_required INT 0
CONFIG proxy.config.reverse_proxy.enabled INT 1
CONFIG proxy.config.http.insert_request_via_str INT 0
CONFIG proxy.config.http.insert_response_via_str INT 0
CONFIG proxy.config.http.server_session_sharing.pool STRING thread
CONFIG proxy.config.http.keep_alive_no_activity_timeout_in INT 120
CONFIG proxy.config.diags.debug.enabled INT 0
CONFIG proxy.config.admin.user_id STRING #-1
ATS
echo "$ats/cache 512M" > "$ats/etc/storage.config"
echo "map http://127.0.0.1:$ATS_PORT/ http://127.0.0.1:$ORIGIN_PORT/" > "$ats/etc/remap.config"

mkdir -p "$work/tollgate-cache"
cat > "$work/tollgate.yaml" <<YAML
listen:
  - address: "127.0.0.1:$REVERSE_PORT"
    mode: reverse
    upstream: "http://127.0.0.1:$ORIGIN_PORT"
  - address: "127.0.0.1:$FORWARD_PORT"
cache:
  path: "$work/tollgate-cache"
  max-size: 1GiB
log:
  access: "off"
YAML

taskset -c 1 "$NGINX" -c "$work/origin.conf" -p "$work"
taskset -c 0 "$NGINX" -c "$work/cache.conf" -p "$work"
(cd "$ats" && TS_RUNROOT="$ats/runroot.yaml" exec taskset -c 0 traffic_server >"$ats/stdout" 2>&1) &
pids+=($!)
taskset -c 0 "$TOLLGATE" serve --config "$work/tollgate.yaml" >"$work/tollgate.out" 2>"$work/tollgate.err" &
pids+=($!)
tollgate_pid=$!
for port in "$ORIGIN_PORT" "$NGINX_PORT" "$ATS_PORT" "$REVERSE_PORT" "$FORWARD_PORT"; do wait_for_port "$port"; done
# The SwiftNIO ceiling: one nio-relay per hit size (each answers every request with that many
# bytes from memory) and one relay to the origin, each alone on core 0 while it is measured.
declare -A nio_pid_of
if [ "$CEILING" = 1 ]; then
  swift build --package-path bench/relay "${release_flags[@]}" >/dev/null
  relay=$(swift build --package-path bench/relay "${release_flags[@]}" --show-bin-path)/nio-relay
  sizes=(1024 16384 262144 8388608)
  for i in 0 1 2 3; do
    taskset -c 0 "$relay" serve $((NIO_PORT + i)) "${sizes[$i]}" >"$work/nio-$i.log" 2>&1 &
    pids+=($!); nio_pid_of[$((NIO_PORT + i))]=$!
  done
  taskset -c 0 "$relay" $((NIO_PORT + 4)) "$ORIGIN_PORT" >"$work/nio-relay.log" 2>&1 &
  pids+=($!); nio_pid_of[$((NIO_PORT + 4))]=$!
  for i in 0 1 2 3 4; do wait_for_port $((NIO_PORT + i)); done
fi
# The ceiling's port for a reverse row's path.
nio_port() { # path
  case "$1" in
    /c/1k.bin) echo $((NIO_PORT + 0)) ;; /c/16k.bin) echo $((NIO_PORT + 1)) ;;
    /c/256k.bin) echo $((NIO_PORT + 2)) ;; /c/8m.bin) echo $((NIO_PORT + 3)) ;; *) echo $((NIO_PORT + 4)) ;;
  esac
}
ats_pid=${pids[0]}  # the subshell exec-ed into traffic_server
nginx_pid=$(nginx_worker cache)
forward_lua

# proxy → "pid base-url mode" for a row's path; mode forward sends absolute-form requests.
endpoint() { # proxy direction
  case "$1 $2" in
    "tollgate reverse") echo "$tollgate_pid http://127.0.0.1:$REVERSE_PORT reverse" ;;
    "tollgate forward") echo "$tollgate_pid http://127.0.0.1:$FORWARD_PORT forward" ;;
    "nginx reverse") echo "$nginx_pid http://127.0.0.1:$NGINX_PORT reverse" ;;
    "ats reverse") echo "$ats_pid http://127.0.0.1:$ATS_PORT reverse" ;;
    "ats forward") echo "$ats_pid http://127.0.0.1:$ATS_PORT forward" ;;
  esac
}

# row → "direction path close description"
row_spec() {
  case "$1" in
    rh1k) echo "reverse /c/1k.bin no reverse_hit_1_KiB" ;;
    rh16k) echo "reverse /c/16k.bin no reverse_hit_16_KiB" ;;
    rh256k) echo "reverse /c/256k.bin no reverse_hit_256_KiB" ;;
    rh8m) echo "reverse /c/8m.bin no reverse_hit_8_MiB" ;;
    rh1k-close) echo "reverse /c/1k.bin close reverse_hit_1_KiB,_new_connection_each" ;;
    rp1k) echo "reverse /n/1k.bin no reverse_pass-through_1_KiB_(no-store)" ;;
    rp8m) echo "reverse /n/8m.bin no reverse_pass-through_8_MiB" ;;
    fh1k) echo "forward /c/1k.bin no forward_hit_1_KiB" ;;
    fh16k) echo "forward /c/16k.bin no forward_hit_16_KiB" ;;
    fh1k-close) echo "forward /c/1k.bin close forward_hit_1_KiB,_new_connection_each" ;;
    fp1k) echo "forward /n/1k.bin no forward_pass-through_1_KiB" ;;
    *) echo "unknown row: $1 (rows: $ALL_ROWS)" >&2; return 1 ;;
  esac
}

# curl through a proxy: prints the response's Cache-Status (Tollgate, nginx) or Age (ATS) headers.
fetch() { # proxy direction path
  local pid base mode
  read -r pid base mode < <(endpoint "$1" "$2")
  if [ "$mode" = forward ]; then
    curl -s -D - -o /dev/null --max-time 10 -x "$base" "http://127.0.0.1:$ORIGIN_PORT$3"
  else
    curl -s -D - -o /dev/null --max-time 10 "$base$3"
  fi | tr -d '\r' | awk -F': ' 'tolower($1)=="cache-status" || tolower($1)=="age" {print $2}' | paste -sd' '
}

# PROXIES= measures only those (e.g. PROXIES=tollgate while trying a change).
PROXIES=${PROXIES:-tollgate nginx ats}
proxies_for() { # direction
  local all="tollgate ats"; [ "$1" = reverse ] && all="tollgate nginx ats"
  for proxy in $all; do case " $PROXIES " in *" $proxy "*) printf '%s ' "$proxy" ;; esac; done
  if [ "$CEILING" = 1 ] && [ "$1" = reverse ]; then printf 'nio '; fi
  echo
}

# Warm every cache for the rows asked for, and check that Tollgate then serves them as hits.
for row in $ROWS; do
  read -r direction path close _ < <(row_spec "$row")
  case "$path" in /c/*) ;; *) continue ;; esac
  for proxy in $(proxies_for "$direction"); do
    [ "$proxy" = nio ] && continue
    fetch "$proxy" "$direction" "$path" >/dev/null; sleep 0.2; fetch "$proxy" "$direction" "$path" >/dev/null
  done
  status=$(fetch tollgate "$direction" "$path")
  case "$status" in *hit*) ;; *) echo "tollgate ($direction) did not serve $path from its cache (Cache-Status: ${status:-none})" >&2; exit 1 ;; esac
done

run() { # proxy direction path close → "rps p99 non-2xx user sys"
  local pid base mode
  if [ "$1" = nio ]; then
    local port; port=$(nio_port "$3")
    pid=${nio_pid_of[$port]}; base="http://127.0.0.1:$port"; mode=reverse
  else
    read -r pid base mode < <(endpoint "$1" "$2")
  fi
  local args=(-t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency)
  [ "$4" = close ] && args+=(-H "Connection: close")
  if [ "$mode" = forward ]; then
    export TARGET="http://127.0.0.1:$ORIGIN_PORT$3"
    wrk_measured "$pid" "${args[@]}" -s "$work/forward.lua" "$base"
  else
    wrk_measured "$pid" "${args[@]}" "$base$3"
  fi | awk '{print $1, $4, $5, $6, $7}'
}

microseconds() {
  awk -v t="$1" 'BEGIN { v = t + 0
    if (t ~ /us$/) print v; else if (t ~ /ms$/) print v * 1000; else if (t ~ /s$/) print v * 1000000; else print v }'
}
hwm_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.0f MiB", k / 1024}'; }
human() { awk -v r="$1" 'BEGIN { if (r >= 10000) printf "%.1fk", r / 1000; else printf "%.0f", r }'; }

mkdir -p bench/results
out="bench/results/peers-$(date +%Y%m%d-%H%M%S).md"
declare -A rps_of p99_of user_of sys_of tollgate_hwm_after
{
  echo "# Tollgate beside nginx and ATS (issue #29), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); load before the run: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "$("$NGINX" -v 2>&1 | sed 's/.*: //'), $(traffic_server --version 2>&1 | grep -o 'Traffic Server [0-9.]*' | head -1), wrk -t1 -c$CONNECTIONS ${DURATION}s."
  echo "Each proxy alone on core 0; wrk and the origin (nginx serving files) on core 1."
  echo "$ROUNDS rounds per row, the order of the proxies rotating. CPU: the proxy's own user and system µs per request."
  echo
  echo "| row | round | proxy | requests/s | p99 | non-2xx | CPU user | CPU system |"
  echo "|---|---|---|---|---|---|---|---|"
  for row in $ROWS; do
    read -r direction path close description < <(row_spec "$row")
    read -r -a proxies < <(proxies_for "$direction")
    for round in $(seq 1 "$ROUNDS"); do
      n=${#proxies[@]}
      for i in $(seq 0 $((n - 1))); do
        proxy=${proxies[$(((i + round - 1) % n))]}
        read -r rps p99 bad user sys < <(run "$proxy" "$direction" "$path" "$close")
        key="$row $proxy"
        rps_of[$key]="${rps_of[$key]:-} $rps"; p99_of[$key]="${p99_of[$key]:-} $(microseconds "$p99")"
        user_of[$key]="${user_of[$key]:-} $user"; sys_of[$key]="${sys_of[$key]:-} $sys"
        echo "| $row | $round | $proxy | $rps | $p99 | $bad | $user | $sys |"
      done
    done
    tollgate_hwm_after[$row]=$(hwm_kib "$tollgate_pid")
  done
  echo
  echo "## Medians"
  echo
  echo "requests/s (p99 ms; CPU user + system µs per request); ratio: Tollgate's requests/s over the faster peer's;"
  echo "CPU ratio: that peer's CPU per request (user + system) over Tollgate's — equal to the ratio where the row is"
  echo "bound by the proxy's own core (small kept-alive rows), apart from it where the row is bound elsewhere (wrk's core);"
  echo "NIO ceiling: bench/relay in the same layout (not a peer), and Tollgate's share of it."
  echo
  echo "| row | Tollgate | nginx | ATS | ratio | CPU ratio | NIO ceiling | of ceiling |"
  echo "|---|---|---|---|---|---|---|---|"
  for row in $ROWS; do
    read -r direction _ _ description < <(row_spec "$row")
    cells=(); best=0; best_name=""; best_cpu=0; cpu_tollgate=0; med_nio=""
    for proxy in tollgate nginx ats nio; do
      key="$row $proxy"
      if [ -z "${rps_of[$key]:-}" ]; then cells+=("—"); continue; fi
      # shellcheck disable=SC2086
      r=$(median ${rps_of[$key]}); p=$(median ${p99_of[$key]}); u=$(median ${user_of[$key]}); s=$(median ${sys_of[$key]})
      eval "med_$proxy=$r"
      cpu=$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}')
      [ "$proxy" = tollgate ] && cpu_tollgate=$cpu
      cells+=("$(human "$r") ($(awk -v p="$p" 'BEGIN {printf "%.2f", p / 1000}'); $u + $s)")
      if [ "$proxy" != tollgate ] && [ "$proxy" != nio ] && awk -v a="$r" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$r; best_name=$proxy; best_cpu=$cpu; fi
    done
    ratio=$(awk -v a="$med_tollgate" -v b="$best" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
    cpu_ratio=$(awk -v a="$best_cpu" -v b="$cpu_tollgate" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
    of_ceiling="—"
    [ -n "$med_nio" ] && of_ceiling=$(awk -v a="$med_tollgate" -v b="$med_nio" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
    echo "| ${description//_/ } | ${cells[0]} | ${cells[1]} | ${cells[2]} | $ratio (vs $best_name) | $cpu_ratio | ${cells[3]} | $of_ceiling |"
  done
  echo "| peak RSS over the run (VmHWM) | $(mib "$(hwm_kib "$tollgate_pid")") | $(mib "$(hwm_kib "$nginx_pid")") (worker) | $(mib "$(hwm_kib "$ats_pid")") | | | | |"
  echo
  echo "Tollgate's peak RSS after each row: $(for row in $ROWS; do printf '%s %s; ' "$row" "$(mib "${tollgate_hwm_after[$row]}")"; done)"
  echo
  if [ -n "${PERF:-}" ] && command -v perf >/dev/null; then
    for row in rh1k rp1k; do
      read -r direction path close description < <(row_spec "$row")
      echo
      echo "Tollgate's self time on ${description//_/ } (perf record -g, ${DURATION}s; top 10 symbols):"
      echo
      echo '```'
      perf record -g -o "$work/perf.data" -p "$tollgate_pid" -- sleep "$DURATION" >/dev/null 2>&1 &
      perf_pid=$!
      sleep 0.3
      run tollgate "$direction" "$path" "$close" >/dev/null
      wait "$perf_pid" || true
      perf report -i "$work/perf.data" --no-children --sort symbol --stdio 2>/dev/null \
        | grep -E '^ +[0-9.]+%' | head -10 | { if command -v swift >/dev/null; then swift demangle --simplified; else cat; fi; } \
        | cut -c1-160 | sed 's/ *$//' || true  # head closes the pipe early
      echo "by object:"
      perf report -i "$work/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' | head -4 | sed 's/ *$//' || true
      echo '```'
    done
  fi
  echo
  echo "Tollgate's threads: $(cat /proc/"$tollgate_pid"/task/*/comm | sort | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)/\2 ×\1/' | paste -sd, | sed 's/,/, /g')."
  echo
  echo "Tollgate's memory at the end (/proc/PID/smaps_rollup, KiB):"
  echo
  echo '```'
  grep -E '^(Rss|Pss|Shared_Clean|Shared_Dirty|Private_Clean|Private_Dirty|Anonymous):' "/proc/$tollgate_pid/smaps_rollup"
  echo "largest mappings (KiB resident, mapping; anonymous ones unnamed: malloc's heaps):"
  awk '/^[0-9a-f]+-[0-9a-f]+ / {name = $6; perms = $2} /^Rss:/ {if ($2 >= 1024) printf "%8d %s %s\n", $2, perms, (name == "" ? "[anonymous]" : name)}' \
    "/proc/$tollgate_pid/smaps" | sort -rn | head -8 | sed "s|$work|WORK|" || true
  echo '```'
} | tee "$out"
echo "written: $out"
