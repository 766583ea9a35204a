#!/usr/bin/env bash
# Cache-hit benchmark: wrk against Tollgate's release build serving hits from its LMDB cache,
# beside nginx's proxy_cache serving the same objects, for 1 KiB, 256 KiB and 8 MiB bodies
# (keep-alive). Both caches are warmed first; the origin is nginx on loopback. The proxy under
# test is pinned to core 0 and wrk to core 1. Every run is bounded (DURATION seconds).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-32}
ORIGIN_PORT=${ORIGIN_PORT:-18180}
NGINX_CACHE_PORT=${NGINX_CACHE_PORT:-18181}
TOLLGATE_PORT=${TOLLGATE_PORT:-13228}

source bench/common.sh

mkdir -p "$work/www" "$work/nginx-cache" "$work/tollgate-cache"
chown www-data "$work/nginx-cache" 2>/dev/null || true
head -c 1024 /dev/urandom > "$work/www/1k.bin"
head -c $((256 * 1024)) /dev/urandom > "$work/www/256k.bin"
head -c $((8 * 1024 * 1024)) /dev/urandom > "$work/www/8m.bin"

# The origin marks everything cacheable for an hour.
nginx_conf origin <<NGINX
  server {
    listen 127.0.0.1:$ORIGIN_PORT;
    root $work/www;
    add_header Cache-Control "max-age=3600";
  }
NGINX
# nginx as the comparison cache, one worker like Tollgate's one pinned core.
nginx_conf cache <<NGINX
  proxy_cache_path $work/nginx-cache keys_zone=bench:10m max_size=1g inactive=1h use_temp_path=off;
  upstream origin { server 127.0.0.1:$ORIGIN_PORT; keepalive 32; }
  server {
    listen 127.0.0.1:$NGINX_CACHE_PORT;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache bench;
      add_header Cache-Status \$upstream_cache_status;
    }
  }
NGINX
cat > "$work/tollgate.yaml" <<YAML
listen:
  - address: "127.0.0.1:$TOLLGATE_PORT"
    mode: reverse
    upstream: "http://127.0.0.1:$ORIGIN_PORT"
cache:
  path: "$work/tollgate-cache"
  max-size: 1GiB
log:
  access: "off"
YAML

"$NGINX" -c "$work/origin.conf" -p "$work"
taskset -c 0 "$NGINX" -c "$work/cache.conf" -p "$work"
taskset -c 0 "$TOLLGATE" serve --config "$work/tollgate.yaml" >"$work/tollgate.out" 2>"$work/tollgate.err" &
pids+=($!)

for port in "$ORIGIN_PORT" "$NGINX_CACHE_PORT" "$TOLLGATE_PORT"; do wait_for_port "$port"; done

# Warm both caches and check that the second request is a hit.
for object in 1k.bin 256k.bin 8m.bin; do
  for port in "$NGINX_CACHE_PORT" "$TOLLGATE_PORT"; do
    curl -s -o /dev/null "http://127.0.0.1:$port/$object"
    sleep 0.2
  done
  status=$(curl -s -D - -o /dev/null "http://127.0.0.1:$TOLLGATE_PORT/$object" | tr -d '\r' | awk -F': ' 'tolower($1)=="cache-status" {print $2}')
  case "$status" in *hit*) ;; *) echo "tollgate did not serve $object from its cache (Cache-Status: ${status:-none})" >&2; exit 1 ;; esac
done

run() { # pid url
  wrk_measured "$1" -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$2"
}
tollgate_pid=${pids[0]}
nginx_pid=$(nginx_worker cache)

mkdir -p bench/results
out="bench/results/cache-hits-$(date +%Y%m%d-%H%M%S).md"
{
  echo "# Cache hits, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)."
  echo "wrk: 1 thread, $CONNECTIONS keep-alive connections, ${DURATION}s per run, core 1; the cache under test on core 0."
  echo
  echo "CPU: the cache's own process, user and system time per request (µs)."
  echo
  echo "| object | cache | requests/s | transfer/s | p50 | p99 | non-2xx | CPU user | CPU system |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for object in 1k.bin 256k.bin 8m.bin; do
    read -r rps tps p50 p99 bad user sys < <(run "$nginx_pid" "http://127.0.0.1:$NGINX_CACHE_PORT/$object")
    echo "| $object | nginx proxy_cache | $rps | $tps | $p50 | $p99 | $bad | $user | $sys |"
    read -r rps tps p50 p99 bad user sys < <(run "$tollgate_pid" "http://127.0.0.1:$TOLLGATE_PORT/$object")
    echo "| $object | tollgate | $rps | $tps | $p50 | $p99 | $bad | $user | $sys |"
  done
} | tee "$out"
echo "written: $out"
