#!/usr/bin/env bash
# HTTP/2 cache hits through a TLS listener (issue #27): Tollgate's reverse listener with `tls`
# (ALPN h2) beside nginx `listen … ssl http2` with `proxy_cache` and `open_file_cache`, both
# serving the same 1 KiB and 16 KiB objects from their caches, in one run. h2load
# (`-c CONNECTIONS -m STREAMS`, REQUESTS requests) on core 1 with the nginx origin; each cache alone
# on core 0 (one nginx worker). ROUNDS rounds, the caches alternating which goes first; medians of
# requests/s and of the serving process's CPU per request (user + system µs).
#
# Usage: bash bench/h2.sh   (TOLLGATE=/path/to/tollgate to measure another build)
# Loopback only; every run is a fixed number of requests. Needs nginx, wrk's installer (common.sh)
# and h2load (nghttp2-client; installed when missing, as root).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
CONNECTIONS=${CONNECTIONS:-16}
STREAMS=${STREAMS:-16}
ORIGIN_PORT=${ORIGIN_PORT:-18380}
NGINX_PORT=${NGINX_PORT:-18381}
TOLLGATE_PORT=${TOLLGATE_PORT:-18382}
source bench/common.sh
if ! command -v h2load >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nghttp2-client
  else
    echo "bench/h2.sh needs: sudo apt-get install -y nghttp2-client" >&2; exit 1
  fi
fi

mkdir -p "$work/www"
head -c 1024 /dev/urandom > "$work/www/1k.bin"
head -c 16384 /dev/urandom > "$work/www/16k.bin"
# One certificate for both, for 127.0.0.1; the key 0600 as Tollgate requires.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$work/srv.key" -out "$work/srv.pem" 2>/dev/null
chmod 600 "$work/srv.key"
chmod 644 "$work/srv.pem"
cp "$work/srv.key" "$work/nginx.key"
chmod 644 "$work/nginx.key"  # nginx's master reads it as root; a copy, apart from Tollgate's

nginx_conf origin <<NGINX
  server {
    listen 127.0.0.1:$ORIGIN_PORT;
    root $work/www;
    add_header Cache-Control "max-age=3600";
  }
NGINX
# nginx as its users run it as an HTTPS cache: one worker, proxy_cache with open_file_cache,
# sendfile, long keep-alive both ways, an upstream keep-alive pool.
nginx_cache_conf 32 <<NGINX
    listen 127.0.0.1:$NGINX_PORT ssl http2;
    ssl_certificate $work/srv.pem;
    ssl_certificate_key $work/nginx.key;
    http2_max_concurrent_streams 128;
NGINX
cat > "$work/tollgate.yaml" <<YAML
listen:
  - address: "127.0.0.1:$TOLLGATE_PORT"
    mode: reverse
    upstream: "http://127.0.0.1:$ORIGIN_PORT"
    tls: { certificate: "$work/srv.pem", key: "$work/srv.key" }
cache:
  path: "$work/tollgate-cache"
  max-size: 1GiB
log:
  access: "off"
YAML

taskset -c 1 "$NGINX" -c "$work/origin.conf" -p "$work"
taskset -c 0 "$NGINX" -c "$work/cache.conf" -p "$work"
taskset -c 0 "$TOLLGATE" serve --config "$work/tollgate.yaml" >"$work/tollgate.out" 2>"$work/tollgate.err" &
pids+=($!)
tollgate_pid=$!
wait_for_port "$ORIGIN_PORT"; wait_for_port "$NGINX_PORT"; wait_for_port "$TOLLGATE_PORT"
sleep 0.3
nginx_pid=$(nginx_worker cache)

# Runs h2load against PORT/PATH while measuring PID's CPU: "requests/s user-µs system-µs failed".
h2load_measured() { # pid port path
  local before after
  before=$(cpu_ticks "$1")
  taskset -c 1 h2load -n "$REQUESTS" -c "$CONNECTIONS" -m "$STREAMS" "https://127.0.0.1:$2$3" > "$work/h2load.out" 2>&1 || true
  after=$(cpu_ticks "$1")
  awk -v before="$before" -v after="$after" -v hz="$(getconf CLK_TCK)" '
    /^finished in/ {rps=$4} /requests: .* total/ {n=$2}
    /status codes:/ {ok=$3}
    END {
      split(before, b, " "); split(after, a, " ")
      user = ok > 0 ? (a[1] - b[1]) * 1e6 / hz / ok : 0; sys = ok > 0 ? (a[2] - b[2]) * 1e6 / hz / ok : 0
      printf "%s %.1f %.1f %s\n", rps, user, sys, (n - ok)
    }' "$work/h2load.out"
}

printf '| object | nginx ssl http2 proxy_cache (req/s, µs/req) | tollgate h2 (req/s, µs/req) | tollgate / nginx |\n|---|---|---|---|\n'
for object in 1k.bin 16k.bin; do
  # Fill both caches (and check that h2 is what is spoken).
  for port in "$NGINX_PORT" "$TOLLGATE_PORT"; do
    taskset -c 1 h2load -n 20 -c 1 "https://127.0.0.1:$port/$object" > "$work/warm.out" 2>&1
    grep -q "Application protocol: h2" "$work/warm.out" || { echo "no h2 on port $port" >&2; cat "$work/warm.out" >&2; exit 1; }
  done
  n_rps=(); n_cpu=(); t_rps=(); t_cpu=()
  for round in $(seq 1 "$ROUNDS"); do
    order=(nginx tollgate); [ $((round % 2)) = 0 ] && order=(tollgate nginx)
    for who in "${order[@]}"; do
      if [ "$who" = nginx ]; then
        read -r rps user sys failed < <(h2load_measured "$nginx_pid" "$NGINX_PORT" "/$object")
        n_rps+=("$rps"); n_cpu+=("$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')")
      else
        read -r rps user sys failed < <(h2load_measured "$tollgate_pid" "$TOLLGATE_PORT" "/$object")
        t_rps+=("$rps"); t_cpu+=("$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')")
      fi
      echo "round $round $who $object: $rps req/s, user $user µs, system $sys µs, not 2xx $failed" >&2
    done
  done
  nr=$(median "${n_rps[@]}"); tr=$(median "${t_rps[@]}")
  printf '| %s | %s, %s | %s, %s | %s |\n' "$object" "$nr" "$(median "${n_cpu[@]}")" "$tr" "$(median "${t_cpu[@]}")" \
    "$(awk -v t="$tr" -v n="$nr" 'BEGIN {printf "%.2f", t / n}')"
done
