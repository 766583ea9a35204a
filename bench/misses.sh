#!/usr/bin/env bash
# Stored misses one after another, as a build fetching its packages in turn makes them: N URLs of
# SIZE bytes through a forward listener on an empty cache, one curl on one kept-alive connection,
# the next request sent when the last response has ended. What it measures is how long a client
# waits per stored miss, commit included when the response's end waits for it (before session 25
# it did: the fsyncs of every entry were on the client's path). nginx serves the files (`expires
# 1h`, so every response is stored); `no-store` gives the same run without storing, to compare.
#
# Usage: bash bench/misses.sh            ROUNDS=5 N=200 SIZE=2000, TOLLGATE=/path/to/tollgate
# Prints, per round, the seconds for N stored misses and for N no-store misses, then the medians;
# a line to bench/results/misses-DATE.md. Bounded: ROUNDS × 2 × N requests; loopback only. The
# cache is on the work directory's filesystem (/tmp): what fsync costs there is what is measured.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
N=${N:-200}
SIZE=${SIZE:-2000}
ORIGIN_PORT=${ORIGIN_PORT:-18390}
PROXY_PORT=${PROXY_PORT:-18393}
source bench/common.sh
command -v curl >/dev/null || install_packages curl

mkdir -p "$work/www"
for i in $(seq 1 "$N"); do head -c "$SIZE" /dev/urandom > "$work/www/f$i"; done
chmod 644 "$work"/www/*
nginx_conf origin <<NGINX
  server {
    listen 127.0.0.1:$ORIGIN_PORT;
    location /c/ { alias $work/www/; expires 1h; }
    location /n/ { alias $work/www/; add_header Cache-Control "no-store"; }
  }
NGINX
taskset -c 1 "$NGINX" -c "$work/origin.conf" -p "$work"
wait_for_port "$ORIGIN_PORT"

# One round: a fresh cache and proxy, N requests under /PREFIX/; prints the seconds.
round() { # prefix
  rm -rf "$work/cache"
  cat > "$work/tollgate.yaml" <<YAML
listen:
  - address: "127.0.0.1:$PROXY_PORT"
cache:
  path: "$work/cache"
log:
  access: "off"
YAML
  taskset -c 0 "$TOLLGATE" serve --config "$work/tollgate.yaml" > "$work/serve.out" 2>&1 &
  local pid=$!
  wait_for_port "$PROXY_PORT"
  local start end
  start=$(date +%s.%N)
  taskset -c 1 curl -sf -o /dev/null -x "http://127.0.0.1:$PROXY_PORT" "http://127.0.0.1:$ORIGIN_PORT/$1/f[1-$N]"
  end=$(date +%s.%N)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo "$end - $start" | bc
}

stored=(); unstored=()
for r in $(seq 1 "$ROUNDS"); do
  s=$(round c); u=$(round n)
  stored+=("$s"); unstored+=("$u")
  echo "round $r: $N stored misses ${s}s, $N no-store misses ${u}s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ms=$(median "${stored[@]}"); mu=$(median "${unstored[@]}")
line="$(date -u +%FT%TZ) $TOLLGATE: $N stored misses of $SIZE B: median ${ms}s; no-store: ${mu}s"
echo "$line"
mkdir -p bench/results
echo "$line" >> "bench/results/misses-$(date -u +%F).md"
