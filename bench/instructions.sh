#!/usr/bin/env bash
# User-space instructions per request of the release build, counted by valgrind (callgrind): the
# yardstick for changes too small for wall-clock noise. A run gives the same count to within
# 0.2 %, on a shared machine too (perf's hardware counters are not available in this VM;
# bench/counts.sh counts retains, allocations and locks instead).
#
# Paths, each through a reverse listener in front of a local nginx origin (access log off):
#   hit1k hit16k — cache hits of 1 KiB and 16 KiB (fetched once, then served from the cache)
#   hit256k      — a cache hit of 256 KiB (a body file: sendfile to the client; not in the default set)
#   pass1k       — 1 KiB pass-through (the origin answers no-store)
#   close1k      — the 1 KiB hit with a new connection for each request (`Connection: close`)
# The proxy runs under callgrind; after a warm-up of 500 requests its counters are zeroed, N
# requests are made (h2load --h1, 8 connections, keep-alive), and the counters are dumped:
# instructions in the dump / N. close1k: wrk (`-c4`, `CLOSE_SECONDS` 4 s, reconnecting after each
# answer) instead of h2load, divided by the requests wrk counted. Kernel work is not counted
# (system time is about nginx's; see docs/performance.md). valgrind's own memcpy counts a copy's bytes more heavily than the CPU's
# `rep movsb`, so a saved copy shows larger here than on the clock.
#
# Usage: bash bench/instructions.sh [hit1k|hit16k|hit256k|pass1k|close1k ...]   (default: all but hit256k)
#   N=2000, TOLLGATE=/path/to/tollgate (an older build, to compare), ORIGIN_PORT, PROXY_PORT.
#   KEEP=DIR keeps each callgrind dump there (callgrind_annotate DIR/FILE shows where they go).
# Needs valgrind and h2load (installed when missing, as root). Bounded: N requests per path;
# loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000}
ORIGIN_PORT=${ORIGIN_PORT:-18380}
PROXY_PORT=${PROXY_PORT:-18383}
paths=("$@")
CLOSE_SECONDS=${CLOSE_SECONDS:-4}
[ ${#paths[@]} -gt 0 ] || paths=(hit1k hit16k pass1k close1k)
for path in "${paths[@]}"; do
  case "$path" in hit1k | hit16k | hit256k | pass1k | close1k) ;; *) echo "unknown path: $path (hit1k hit16k hit256k pass1k close1k)" >&2; exit 1 ;; esac
done
source bench/common.sh
missing=()
command -v valgrind >/dev/null || missing+=(valgrind)
command -v h2load >/dev/null || missing+=(nghttp2-client)
install_packages "${missing[@]}"

# valgrind 3.19 cannot read the DWARF 5 of a Swift release binary: it runs a copy without debug
# information (the symbol table stays, so dumps still name functions).
objcopy --strip-debug "$TOLLGATE" "$work/tollgate"

mkdir -p "$work/www" "$work/cache"
head -c 1024 /dev/urandom > "$work/www/1k.bin"
head -c 16384 /dev/urandom > "$work/www/16k.bin"
head -c 262144 /dev/urandom > "$work/www/256k.bin"
chmod 644 "$work"/www/*
nginx_conf origin <<NGINX
  sendfile on;
  server {
    listen 127.0.0.1:$ORIGIN_PORT;
    location /c/ { alias $work/www/; add_header Cache-Control "max-age=3600"; }
    location /n/ { alias $work/www/; add_header Cache-Control "no-store"; }
  }
NGINX
"$NGINX" -c "$work/origin.conf" -p "$work"
cat > "$work/tollgate.yaml" <<YAML
listen:
  - address: "127.0.0.1:$PROXY_PORT"
    mode: reverse
    upstream: "http://127.0.0.1:$ORIGIN_PORT"
cache:
  path: "$work/cache"
  max-size: 1GiB
log:
  access: "off"
YAML
(cd "$work" && exec valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file="$work/callgrind.out" \
  "$work/tollgate" serve --config "$work/tollgate.yaml" >"$work/tollgate.log" 2>&1) &
proxy=$!
pids+=("$proxy")
# Under valgrind the proxy takes a few seconds to start.
for _ in $(seq 1 600); do
  (exec 3<>/dev/tcp/127.0.0.1/"$PROXY_PORT") 2>/dev/null && break
  kill -0 "$proxy" 2>/dev/null || { cat "$work/tollgate.log" >&2; exit 1; }
  sleep 0.1
done
wait_for_port "$PROXY_PORT"

echo "| path | instructions per request |"
echo "|---|---|"
for path in "${paths[@]}"; do
  case "$path" in hit1k | close1k) url=/c/1k.bin ;; hit16k) url=/c/16k.bin ;; hit256k) url=/c/256k.bin ;; pass1k) url=/n/1k.bin ;; esac
  base="http://127.0.0.1:$PROXY_PORT$url"
  curl -s -o /dev/null --max-time 30 "$base"
  status=$(curl -s -D - -o /dev/null --max-time 30 "$base" | tr -d '\r' | awk -F': ' 'tolower($1)=="cache-status" {print $2}')
  case "$path:$status" in
    hit*:*hit* | close*:*hit*) ;; pass*:*fwd=*) ;;
    *) echo "$path: unexpected Cache-Status: ${status:-none}" >&2; exit 1 ;;
  esac
  h2load --h1 -n 500 -c 8 "$base" >/dev/null
  callgrind_control --zero "$proxy" >/dev/null 2>&1
  if [ "$path" = close1k ]; then
    report=$(wrk -t1 -c4 -d"${CLOSE_SECONDS}s" -H 'Connection: close' "$base")
    count=$(awk '/requests in/ {print $1}' <<<"$report")
    if grep -q 'Non-2xx\|Socket errors' <<<"$report"; then echo "$path: $report" >&2; exit 1; fi
  else
    count=$N
    answered=$(h2load --h1 -n "$N" -c 8 "$base" | awk '/^status codes:/ {print $3}')
    [ "$answered" = "$N" ] || { echo "$path: $answered of $N requests answered 2xx" >&2; exit 1; }
  fi
  callgrind_control --dump="$path" "$proxy" >/dev/null 2>&1
  dump=""
  for _ in $(seq 1 100); do
    dump=$(grep -lx "desc: Trigger: dump $path" "$work"/callgrind.out* 2>/dev/null | head -1 || true)
    [ -n "$dump" ] && grep -q '^totals:\|^summary:' "$dump" && break
    sleep 0.1
  done
  [ -n "$dump" ] || { echo "$path: no callgrind dump" >&2; exit 1; }
  total=$(awk '/^(totals|summary):/ {print $2; exit}' "$dump")
  echo "| $path | $(awk -v t="$total" -v n="$count" 'BEGIN {printf "%.0f", t / n}') |"
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$dump" "$KEEP/callgrind-$path.out"; fi
  rm -f "$dump"
done
