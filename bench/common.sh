# Shared by the bench scripts (sourced, not run): tools, the release build, a work directory that
# is cleaned up with every process started in it, and waiting for a port.

# nginx and wrk from Debian, installed when missing (as root), else the command to run.
need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v wrk >/dev/null || need+=(wrk)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
  else
    echo "bench needs: sudo apt-get install -y ${need[*]}" >&2; exit 1
  fi
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

swift build -c release --product tollgate >/dev/null
TOLLGATE=$(swift build -c release --show-bin-path)/tollgate

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
