#!/usr/bin/env bash
# A Tollgate cluster on this machine's loopback, to try the tier (and for the tests):
# three `tollgate serve` instances, each with its own cache, configuration and admin port, behind
# HAProxy with deploy/cluster/haproxy.cfg (consistent hashing on the URL).
#
#   deploy/cluster/try-local.sh start DIR       starts it all; prints `front 127.0.0.1:PORT`
#   deploy/cluster/try-local.sh stop DIR        stops every process it started, removes the files it
#                                               made (and DIR when that leaves it empty)
#   deploy/cluster/try-local.sh kill-one DIR N  stops instance N (1-3); waits until HAProxy has
#                                               marked it down
#   deploy/cluster/try-local.sh status DIR      HAProxy's view: one line per instance
#
#   curl -x http://127.0.0.1:PORT http://example.com/   # through the front
#
# Environment:
#   TOLLGATE     the binary (default .build/release/tollgate, from the repository's root)
#   HAPROXY      the haproxy binary (default: haproxy on PATH)
#   FRONT_PORT   the front's port (default: a free one); STATS_PORT likewise for HAProxy's stats
#   CONNECT_PORTS  the instances' access.connect-ports, as YAML (default [443])
#   WAIT_SECONDS how long start and kill-one wait for things to come up or go down (default 20)
#
# Everything listens on 127.0.0.1. The instances pick their own ports (port 0) and the script
# reads them from their `listening on` lines. DIR holds, per instance, tN/tollgate.yaml, tN/cache,
# tN/access.log, tN/stdout, tN/stderr and tN/pid; and haproxy.cfg's environment (cluster.env),
# haproxy.pid and haproxy.log.
set -euo pipefail

# Close every descriptor inherited above 2: the daemons started below would hold them open for
# their whole life, and a caller waiting for one to reach end-of-file (a pipe of `ssh`, a CI
# runner, Foundation's Process, which watches such a descriptor for its child's exit) would wait
# for the cluster to stop instead of for this script.
for fd in $(ls /proc/$$/fd); do
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
TOLLGATE=${TOLLGATE:-$root/.build/release/tollgate}
HAPROXY=${HAPROXY:-haproxy}
WAIT_SECONDS=${WAIT_SECONDS:-20}
CONNECT_PORTS=${CONNECT_PORTS:-[443]}
INSTANCES=3

usage() {
    echo "usage: $0 start DIR | stop DIR | kill-one DIR N | status DIR" >&2
    exit 1
}

fail() {
    echo "try-local: $*" >&2
    # A start that fails half-way stops what it started.
    if [ "${starting:-0}" = 1 ]; then
        starting=0
        stop
    fi
    exit 1
}

# Waits (at most WAIT_SECONDS) until the command succeeds.
wait_for() {
    local what=$1
    shift
    local tries=$((WAIT_SECONDS * 10))
    for ((i = 0; i < tries; i++)); do
        if "$@"; then return 0; fi
        sleep 0.1
    done
    fail "gave up after ${WAIT_SECONDS}s waiting for $what"
}

# Whether the process runs: it exists and is not a zombie (once this script has exited, the
# instances are the init process's children, and a stopped one stays a zombie until it reaps it).
alive() {
    [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
    local state
    state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [[ "$state" != Z* ]]
}

# Stops the process whose pid is in FILE: SIGTERM, then SIGKILL after WAIT_SECONDS.
stop_pidfile() {
    local file=$1 pid
    [ -f "$file" ] || return 0
    pid=$(cat "$file")
    if alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
        local tries=$((WAIT_SECONDS * 10))
        for ((i = 0; i < tries; i++)); do
            alive "$pid" || break
            sleep 0.1
        done
        if alive "$pid"; then
            echo "try-local: pid $pid did not stop on SIGTERM; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$file"
}

# HAProxy's stats as CSV (proxy name, server name, …, status in column 18).
stats_csv() {
    local port
    port=$(sed -n 's/^TOLLGATE_STATS=127.0.0.1://p' "$dir/cluster.env")
    curl -sf --noproxy '*' --max-time 2 "http://127.0.0.1:$port/;csv"
}

# The status HAProxy gives instance N (UP, DOWN, …), or nothing.
server_status() {
    stats_csv 2>/dev/null | awk -F, -v name="tollgate$1" '$1 == "tollgate" && $2 == name { print $18 }'
}

all_up() {
    local n
    for ((n = 1; n <= INSTANCES; n++)); do
        [ "$(server_status "$n")" = "UP" ] || return 1
    done
}

# A port nobody listens on, from a range outside Linux's ephemeral ports (where port-0 binds land).
pick_port() {
    local port tries
    for ((tries = 0; tries < 50; tries++)); do
        port=$((20000 + RANDOM % 12000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    fail "no free port found"
}

start_instance() {
    local n=$1 d="$dir/t$1"
    mkdir -p "$d/cache"
    cat >"$d/tollgate.yaml" <<YAML
# Instance $n of the try-local cluster (written by deploy/cluster/try-local.sh).
listen:
  - address: "127.0.0.1:0"
    mode: forward
admin:
  address: "127.0.0.1:0"
cache:
  path: "$d/cache"
  max-size: 256MiB
  kind: shared
access:
  clients: ["127.0.0.0/8"]
  connect-ports: $CONNECT_PORTS
  destinations:
    - { deny: "169.254.0.0/16" }
    - { allow: all }
log:
  access: "$d/access.log"
  format: json
hosts:
  - match: "**"
    session: default
YAML
    local problems
    problems=$("$TOLLGATE" check-config "$d/tollgate.yaml" 2>&1) || fail "instance $n: bad configuration: $problems"
    # Its own data directory (credentials, cookies) and cache defaults, apart from the user's.
    XDG_DATA_HOME="$d/data" XDG_CACHE_HOME="$d/xdg-cache" \
        "$TOLLGATE" serve --config "$d/tollgate.yaml" </dev/null >"$d/stdout" 2>"$d/stderr" &
    echo $! >"$d/pid"
}

# The port of instance N's listener of MODE (forward, admin), from its stdout.
listening_port() {
    sed -n "s/^listening on 127\.0\.0\.1:\([0-9]*\) ($2)\$/\1/p" "$dir/t$1/stdout" | head -n 1
}

instance_listening() {
    local n=$1
    alive "$(cat "$dir/t$n/pid")" || fail "instance $n exited: $(tail -n 5 "$dir/t$n/stderr")"
    [ -n "$(listening_port "$n" forward)" ] && [ -n "$(listening_port "$n" admin)" ]
}

start() {
    command -v "$HAPROXY" >/dev/null || fail "haproxy not found (apt-get install haproxy)"
    [ -x "$TOLLGATE" ] || fail "no tollgate binary at $TOLLGATE (make release, or set TOLLGATE)"
    [ -f "$dir/haproxy.pid" ] && fail "$dir already holds a cluster (stop it first)"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    starting=1
    local n
    for ((n = 1; n <= INSTANCES; n++)); do start_instance "$n"; done
    for ((n = 1; n <= INSTANCES; n++)); do wait_for "instance $n to listen" instance_listening "$n"; done

    local env="$dir/cluster.env" attempt front stats
    for ((attempt = 0; attempt < 10; attempt++)); do
        front=${FRONT_PORT:-$(pick_port)}
        stats=${STATS_PORT:-$(pick_port)}
        {
            echo "TOLLGATE_FRONT=127.0.0.1:$front"
            echo "TOLLGATE_STATS=127.0.0.1:$stats"
            for ((n = 1; n <= INSTANCES; n++)); do
                echo "TOLLGATE_$n=127.0.0.1:$(listening_port "$n" forward)"
                echo "TOLLGATE_${n}_ADMIN_HOST=127.0.0.1"
                echo "TOLLGATE_${n}_ADMIN_PORT=$(listening_port "$n" admin)"
            done
        } >"$env"
        # -D: HAProxy detaches once every listener is bound; a port taken meanwhile fails here.
        if (set -a && . "$env" && exec "$HAPROXY" -D -f "$here/haproxy.cfg" -p "$dir/haproxy.pid") \
            </dev/null >"$dir/haproxy.log" 2>&1; then
            break
        fi
        rm -f "$dir/haproxy.pid"
        if [ -n "${FRONT_PORT:-}" ] && [ -n "${STATS_PORT:-}" ]; then
            fail "haproxy did not start: $(tail -n 5 "$dir/haproxy.log")"
        fi
    done
    [ -f "$dir/haproxy.pid" ] || fail "haproxy did not start: $(tail -n 5 "$dir/haproxy.log")"
    wait_for "HAProxy to see every instance up" all_up
    starting=0
    echo "front 127.0.0.1:$front"
}

stop() {
    [ -d "$dir" ] || return 0
    stop_pidfile "$dir/haproxy.pid"
    local n
    for ((n = 1; n <= INSTANCES; n++)); do stop_pidfile "$dir/t$n/pid"; done
    # Only what start made: the instances' folders and HAProxy's files; then DIR if it is empty.
    for ((n = 1; n <= INSTANCES; n++)); do rm -rf "${dir:?}/t$n"; done
    rm -f "$dir/cluster.env" "$dir/haproxy.log" "$dir/haproxy.pid"
    rmdir "$dir" 2>/dev/null || true
}

kill_one() {
    local n=$1
    [[ "$n" =~ ^[1-9][0-9]*$ ]] && [ "$n" -le "$INSTANCES" ] || fail "no instance $n (1-$INSTANCES)"
    [ -f "$dir/t$n/pid" ] || fail "instance $n is not running"
    stop_pidfile "$dir/t$n/pid"
    instance_down() { [ "$(server_status "$n")" != "UP" ] && [ -n "$(server_status "$n")" ]; }
    wait_for "HAProxy to mark instance $n down" instance_down
    echo "stopped tollgate$n"
}

status() {
    stats_csv | awk -F, '$1 == "tollgate" && $2 != "BACKEND" { print $2, $18 }'
}

[ $# -ge 2 ] || usage
command=$1
dir=$2
case "$command" in
    start) start ;;
    stop) stop ;;
    kill-one)
        [ $# -eq 3 ] || usage
        kill_one "$3"
        ;;
    status) status ;;
    *) usage ;;
esac
