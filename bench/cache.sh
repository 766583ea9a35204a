#!/usr/bin/env bash
# Cache-hit benchmark: wrk against Tollgate's release build serving hits from its LMDB cache,
# beside nginx's proxy_cache serving the same objects, for 1 KiB, 256 KiB and 8 MiB bodies
# (keep-alive). Both caches are warmed first; the origin is nginx on loopback. The proxy under
# test is pinned to core 0 and wrk to core 1. Every run is bounded (DURATION seconds); ROUNDS
# rounds per object (default 3), the caches alternating who goes first, summarized by medians.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-32}
# Rounds per object size; the table ends with the medians (odd counts give a middle run).
ROUNDS=${ROUNDS:-3}
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
declare -A rates  # "object cache round" -> requests/s
{
  echo "# Cache hits, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)."
  echo "wrk: 1 thread, $CONNECTIONS keep-alive connections, ${DURATION}s per run, core 1; the cache under test on core 0."
  echo "$ROUNDS rounds per object, the two caches alternating which goes first (a drift of the machine"
  echo "during a round then favours neither)."
  echo
  echo "CPU: the cache's own process, user and system time per request (µs)."
  echo
  echo "| object | round | cache | requests/s | transfer/s | p50 | p99 | non-2xx | CPU user | CPU system |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for object in 1k.bin 256k.bin 8m.bin; do
    for round in $(seq 1 "$ROUNDS"); do
      order=(nginx tollgate)
      [ $((round % 2)) -eq 0 ] && order=(tollgate nginx)
      for cache in "${order[@]}"; do
        if [ "$cache" = nginx ]; then
          read -r rps tps p50 p99 bad user sys < <(run "$nginx_pid" "http://127.0.0.1:$NGINX_CACHE_PORT/$object")
          name="nginx proxy_cache"
        else
          read -r rps tps p50 p99 bad user sys < <(run "$tollgate_pid" "http://127.0.0.1:$TOLLGATE_PORT/$object")
          name=tollgate
        fi
        rates["$object $cache $round"]=$rps
        echo "| $object | $round | $name | $rps | $tps | $p50 | $p99 | $bad | $user | $sys |"
      done
    done
  done
  echo
  echo "Summary: the median of the rounds for each cache, Tollgate's median as a share of nginx's,"
  echo "and the lowest and highest share within one round."
  echo
  echo "| object | nginx proxy_cache (median req/s) | tollgate (median req/s) | tollgate / nginx | per round |"
  echo "|---|---|---|---|---|"
  for object in 1k.bin 256k.bin 8m.bin; do
    n=(); t=(); shares=()
    for round in $(seq 1 "$ROUNDS"); do
      n+=("${rates["$object nginx $round"]}"); t+=("${rates["$object tollgate $round"]}")
      shares+=("$(awk -v a="${rates["$object tollgate $round"]}" -v b="${rates["$object nginx $round"]}" 'BEGIN {printf "%.0f", (b > 0 ? a * 100 / b : 0)}')")
    done
    nm=$(median "${n[@]}"); tm=$(median "${t[@]}")
    range=$(printf '%s\n' "${shares[@]}" | sort -g | sed -n '1p;$p' | paste -sd'-')
    echo "| $object | $nm | $tm | $(awk -v a="$tm" -v b="$nm" 'BEGIN {printf "%.0f %%", (b > 0 ? a * 100 / b : 0)}') | $range % |"
  done
} | tee "$out"
echo "written: $out"
