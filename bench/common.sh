# Shared by the bench scripts (sourced, not run): tools, the release build, a work directory that
# is cleaned up with every process started in it, and waiting for a port.

# Installs the Debian packages named (as root), else says the command to run and stops.
install_packages() {
  [ $# -gt 0 ] || return 0
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
  else
    echo "$(basename "$0") needs: sudo apt-get install -y $*" >&2; exit 1
  fi
}

# nginx and wrk from Debian, installed when missing.
need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v wrk >/dev/null || need+=(wrk)
install_packages "${need[@]}"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# As `make release` builds (link-time optimization, the Swift runtime linked statically, no
# dynamic exclusivity checks in the dependencies either).
release_flags=(-c release --static-swift-stdlib --experimental-lto-mode=full -Xswiftc -enforce-exclusivity=unchecked)

# TOLLGATE=/path/to/binary measures that binary instead (an older build, to compare with).
if [ -z "${TOLLGATE:-}" ]; then
    swift build "${release_flags[@]}" --product tollgate >/dev/null
    TOLLGATE=$(swift build "${release_flags[@]}" --show-bin-path)/tollgate
fi

# Every process started by a script goes into `pids`; nginx instances leave WORK/*.pid files.
work=$(mktemp -d)
chmod 755 "$work"  # nginx workers run as www-data and must read the files
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pidfile in "$work"/*.pid; do [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

wait_for_port() {
  for _ in $(seq 1 100); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2; return 1
}

# Writes WORK/NAME.conf for an nginx of one worker (pid in WORK/NAME.pid, which cleanup stops; no
# access log; long keep-alive); standard input is the rest of its http block.
nginx_conf() { # name
  {
    cat <<NGINX
worker_processes 1;
pid $work/$1.pid;
error_log $work/$1-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
NGINX
    cat
    echo "}"
  } > "$work/$1.conf"
}

# Writes WORK/cache.conf: nginx as its users run it as a cache — one worker, proxy_cache with
# open_file_cache, sendfile, tcp_nopush, keep-alive in the millions both ways, an upstream keep-alive
# pool of `pool` connections to 127.0.0.1:ORIGIN_PORT. Standard input is the server block's lines
# before its `location /` (the listen line, TLS settings); the location adds Cache-Status.
nginx_cache_conf() { # pool
  local server; server=$(cat)
  nginx_conf cache <<NGINX
  sendfile on;
  tcp_nopush on;
  open_file_cache max=1000 inactive=60s;
  proxy_cache_path $work/nginx-cache keys_zone=bench:10m max_size=1g inactive=1h use_temp_path=off;
  upstream origin { server 127.0.0.1:$ORIGIN_PORT; keepalive $1; keepalive_requests 1000000; }
  server {
$server
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache bench;
      add_header Cache-Status \$upstream_cache_status;
    }
  }
NGINX
}

# CPU time a process has used so far, user and system, in clock ticks: "UTIME STIME".
cpu_ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }

# The (one) worker of the nginx whose master wrote WORK/NAME.pid.
nginx_worker() { pgrep -P "$(cat "$work/$1.pid")" | head -1; }

# Runs wrk (its arguments) while measuring the CPU `pid` uses, and prints
# "requests/s transfer/s p50 p99 non-2xx user-us/request system-us/request". CPU per request
# varies much less between runs than throughput on a shared machine, and says where time goes.
wrk_measured() { # pid wrk-arguments...
  local pid=$1; shift
  local before after
  before=$(cpu_ticks "$pid")
  taskset -c 1 wrk "$@" > "$work/wrk.out" 2>&1 || true
  after=$(cpu_ticks "$pid")
  awk -v before="$before" -v after="$after" -v hz="$(getconf CLK_TCK)" '
    /requests in/ {n=$1} /Requests\/sec/ {rps=$2} /Transfer\/sec/ {tps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
    /Non-2xx/ {bad=$5}
    END {
      split(before, b, " "); split(after, a, " ")
      user = n > 0 ? (a[1] - b[1]) * 1e6 / hz / n : 0; sys = n > 0 ? (a[2] - b[2]) * 1e6 / hz / n : 0
      printf "%s %s %s %s %s %.1f %.1f\n", rps, tps, p50, p99, (bad == "" ? 0 : bad), user, sys
    }' "$work/wrk.out"
}

# The median of numbers (odd counts give the middle one).
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

# wrk sends origin-form requests; through a forward proxy the target must be absolute-form:
# writes WORK/forward.lua, which sends GET $TARGET (set TARGET in wrk's environment).
forward_lua() {
  cat > "$work/forward.lua" <<'LUA'
local target = os.getenv("TARGET")
request = function() return wrk.format("GET", target) end
LUA
}
