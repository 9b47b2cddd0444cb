#!/usr/bin/env bash
# scripts/cluster.sh start|stop|status [DIR]
#
# The several-replicas topology on one machine, from Debian packages (postgresql, haproxy):
#   - PostgreSQL: a throwaway cluster in DIR/pg (initdb; as the `postgres` user when run as root),
#     listening on 127.0.0.1 on a free port, with a database `mcplex`;
#   - two `mcplex serve` replicas on their own loopback ports, one config, one store: the
#     PostgreSQL database when this mcplex has `--store`, else one shared SQLite data directory;
#   - HAProxy in front (deploy/haproxy.cfg): round-robin for 2026-07-28 requests, session-era
#     requests kept on the replica that created their Mcp-Session-Id, health checks on /readyz.
# `start` prints the URL to point a client at and writes DIR/cluster.env (sourceable: the mcplex
# CLI then works on the cluster's store, e.g. `mcplex token create ...`). Idempotent: `start` on a
# running cluster prints it again; a partly running one is restarted; `stop` stops whatever runs.
#
# DIR defaults to ${TMPDIR:-/tmp}/mcplex-cluster. Environment:
#   MCPLEX_BIN              the mcplex binary (default: target/release, else target/debug, else PATH)
#   MCPLEX_CLUSTER_CONFIG   an mcp_config.json to serve (default: one `demo` server, the fixture
#                           binary next to mcplex)
#   MCPLEX_CLUSTER_PORT     HAProxy's port (default: a free one); MCPLEX_CLUSTER_BIND its host
#                           (default 127.0.0.1)
#   MCPLEX_PG_BIN           PostgreSQL's bin directory (default: the newest /usr/lib/postgresql/*/bin)
#   MCPLEX_CLUSTER_STORE    sqlite to keep the replicas on one SQLite data directory even when
#                           this mcplex supports --store
set -euo pipefail
umask 077

repo="$(cd "$(dirname "$0")/.." && pwd)"
cmd="${1:-}"
dir="${2:-${TMPDIR:-/tmp}/mcplex-cluster}"

usage() {
  echo "usage: $0 start|stop|status [DIR]" >&2
  exit 2
}

say() { echo "cluster: $*" >&2; }
die() {
  say "$*"
  exit 1
}

# --- helpers ---------------------------------------------------------------------------------

# The HTTP status of GET http://$1$2 (000 when nothing answers); plain bash, no curl needed.
http_status() {
  local authority="$1" path="$2" host port line
  host="${authority%:*}"
  port="${authority##*:}"
  if ! { exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null; then
    echo 000
    return
  fi
  printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$path" >&3 2>/dev/null || true
  line=""
  IFS= read -r -t 5 line <&3 || true
  exec 3>&- 3<&-
  line="${line#HTTP/* }"
  line="${line:0:3}"
  if [[ "$line" =~ ^[0-9]{3}$ ]]; then echo "$line"; else echo 000; fi
}

# Whether HAProxy at $1 answers /readyz with 200 through both replicas (its answers name them).
lb_sees_both() {
  local host="${1%:*}" port="${1##*:}" seen=" " line
  for _ in 1 2 3 4; do
    { exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || return 1
    printf 'GET /readyz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 2>/dev/null || true
    IFS= read -r -t 5 line <&3 || true
    if [[ "$line" == HTTP/*" 200"* ]]; then
      while IFS= read -r -t 5 line <&3; do
        line="${line%$'\r'}"
        [ -n "$line" ] || break
        if [[ "${line,,}" == x-mcplex-replica:* ]]; then seen="$seen${line#*: } "; fi
      done
    fi
    exec 3>&- 3<&-
  done
  [[ "$seen" == *" r1 "* && "$seen" == *" r2 "* ]]
}

port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The ports a free one is drawn from: outside the kernel's ephemeral range (below it, else
# above it), where no outgoing connection's local port and no listener bound to port 0 (as the
# test harness binds) can be when the server binds it; the connect check below sees only
# listeners. When the range leaves no room on either side, anywhere from 10000 to 60000.
port_floor=10000 port_ceiling=60000
if { read -r ephemeral_low ephemeral_high </proc/sys/net/ipv4/ip_local_port_range; } 2>/dev/null; then
  if [ "$ephemeral_low" -gt 11000 ]; then
    port_ceiling="$ephemeral_low"
  elif [ "$ephemeral_high" -lt 64000 ]; then
    port_floor=$((ephemeral_high + 1)) port_ceiling=65000
  fi
fi

# Sets the variable named $1 to a port nothing listens on, not handed out earlier in this run
# (assigned, not printed: a command substitution's subshell would forget what it handed out).
taken=" "
free_port() {
  local candidate
  for _ in $(seq 1 200); do
    candidate=$((port_floor + RANDOM % (port_ceiling - port_floor)))
    if [[ "$taken" != *" $candidate "* ]] && ! port_in_use "$candidate"; then
      taken="$taken$candidate "
      printf -v "$1" '%s' "$candidate"
      return
    fi
  done
  die "no free port found"
}

# Whether process $1 lives (exists and is not a zombie waiting to be reaped). Right after a
# fork its command line is still this script's: a check by command line would call it gone.
alive() {
  [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# Whether the replica at $1 answers /readyz?all with 200.
replica_ready() {
  [ "$(http_status "$1" "/readyz?all")" = 200 ]
}

# Waits, while process $1 lives, until the command after $2 succeeds: 0 once it does, 1 when the
# process exited first. At the start's deadline it dies, naming $2 (where to look).
wait_ready() {
  local pid="$1" log="$2"
  shift 2
  until "$@"; do
    alive "$pid" || return 1
    [ "$SECONDS" -lt "$deadline" ] || die "not ready in time ($*): see $log"
    sleep 0.2
  done
  alive "$pid"
}

# Whether the log file $1 says its server could not bind its port.
bind_refused() {
  grep -q -e 'Address already in use' -e 'could not bind' "$1" 2>/dev/null
}

# Whether the pid in file $1 runs a program whose command line contains $2.
running() {
  local pidfile="$1" what="$2" pid
  [ -f "$pidfile" ] || return 1
  pid="$(cat "$pidfile")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  # A zombie has exited: it only waits to be reaped.
  if grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null; then return 1; fi
  local cmdline
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *"$what"* ]]
}

# SIGTERM the process of pid file $1 (if it still runs $2), SIGKILL after 10 s.
stop_pid() {
  local pidfile="$1" what="$2" pid
  if running "$pidfile" "$what"; then
    pid="$(cat "$pidfile")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      running "$pidfile" "$what" || break
      sleep 0.1
    done
    if running "$pidfile" "$what"; then
      say "$what (pid $pid) did not stop after SIGTERM; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
}

find_mcplex() {
  if [ -n "${MCPLEX_BIN:-}" ]; then
    echo "$MCPLEX_BIN"
  elif [ -x "$repo/target/release/mcplex" ]; then
    echo "$repo/target/release/mcplex"
  elif [ -x "$repo/target/debug/mcplex" ]; then
    echo "$repo/target/debug/mcplex"
  elif command -v mcplex >/dev/null; then
    command -v mcplex
  else
    die "no mcplex binary: build it (cargo build --release --bins) or set MCPLEX_BIN"
  fi
}

find_pg_bin() {
  local candidate
  if [ -n "${MCPLEX_PG_BIN:-}" ]; then
    echo "$MCPLEX_PG_BIN"
    return
  fi
  candidate="$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
  if [ -n "$candidate" ] && [ -x "$candidate/initdb" ]; then
    echo "$candidate"
  elif command -v initdb >/dev/null; then
    dirname "$(command -v initdb)"
  else
    die "PostgreSQL is not installed (apt-get install postgresql) or set MCPLEX_PG_BIN"
  fi
}

# Runs a PostgreSQL command as the cluster's owner (initdb and postgres refuse root).
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# --- state -----------------------------------------------------------------------------------

run="$dir/run"
logs="$dir/logs"
pgdata="$dir/pg/data"
pgsock="$dir/pg/run"
envfile="$dir/cluster.env"

load_env() {
  # shellcheck disable=SC1090
  [ -f "$envfile" ] && . "$envfile"
}

pg_running() {
  [ -f "$pgdata/postmaster.pid" ] && as_pg "$(find_pg_bin)/pg_ctl" -D "$pgdata" status >/dev/null 2>&1
}

all_running() {
  load_env || return 1
  pg_running &&
    running "$run/replica-1.pid" "$CLUSTER_REPLICA_1" &&
    running "$run/replica-2.pid" "$CLUSTER_REPLICA_2" &&
    running "$run/haproxy.pid" "$run/haproxy.cfg"
}

print_urls() {
  load_env
  cat <<EOF
cluster: running in $dir
  MCP endpoint (HAProxy): $CLUSTER_URL
  replica r1:             http://$CLUSTER_REPLICA_1/mcp
  replica r2:             http://$CLUSTER_REPLICA_2/mcp
  PostgreSQL:             127.0.0.1:$CLUSTER_PG_PORT, database mcplex
  store of the replicas:  $CLUSTER_STORE_KIND
  logs:                   $logs
  the CLI on this store:  set -a; . $envfile; set +a; $CLUSTER_MCPLEX token create --name me --permissions read
  stop:                   $0 stop $dir
EOF
  echo "$CLUSTER_URL"
}

# --- commands --------------------------------------------------------------------------------

stop() {
  if [ ! -d "$dir" ]; then
    say "nothing in $dir"
    return
  fi
  load_env || true
  stop_pid "$run/haproxy.pid" "$run/haproxy.cfg"
  stop_pid "$run/replica-1.pid" "${CLUSTER_REPLICA_1:-mcplex serve}"
  stop_pid "$run/replica-2.pid" "${CLUSTER_REPLICA_2:-mcplex serve}"
  if [ -f "$pgdata/postmaster.pid" ]; then
    as_pg "$(find_pg_bin)/pg_ctl" -D "$pgdata" -m fast -w -t 30 stop >>"$logs/pg_ctl.log" 2>&1 || true
  fi
  say "stopped (state kept in $dir; rm -rf it to start afresh)"
}

start() {
  local mcplex pg_bin fixture config store_kind pgpass pg_port lb_port bind r1 r2 store_url
  if all_running; then
    print_urls
    return
  fi
  if [ -d "$run" ]; then
    say "not (fully) running: stopping what is left, then starting"
    stop
  fi
  command -v haproxy >/dev/null || die "HAProxy is not installed (apt-get install haproxy)"
  mcplex="$(cd "$(dirname "$(find_mcplex)")" && pwd)/$(basename "$(find_mcplex)")"
  [ -x "$mcplex" ] || die "not executable: $mcplex"
  pg_bin="$(find_pg_bin)"

  mkdir -p "$dir" "$run" "$logs"
  dir="$(cd "$dir" && pwd)"
  run="$dir/run" logs="$dir/logs" pgdata="$dir/pg/data" pgsock="$dir/pg/run" envfile="$dir/cluster.env"

  # Ports: the ones of an earlier start when they are still free (a client keeps its URL).
  pg_port="" lb_port="" r1="" r2=""
  if load_env; then
    pg_port="$CLUSTER_PG_PORT" lb_port="${CLUSTER_URL#http://*:}" lb_port="${lb_port%/mcp}"
    r1="$CLUSTER_REPLICA_1" r2="$CLUSTER_REPLICA_2"
    for p in "$pg_port" "$lb_port" "${r1##*:}" "${r2##*:}"; do
      if port_in_use "$p"; then pg_port="" lb_port="" r1="" r2="" && break; fi
    done
  fi
  # Ports already chosen (reused, or the caller's) are never drawn again, retries included.
  taken="$taken$pg_port ${lb_port} ${r1##*:} ${r2##*:} ${MCPLEX_CLUSTER_PORT:-} "
  bind="${MCPLEX_CLUSTER_BIND:-127.0.0.1}"
  [ -n "$pg_port" ] || free_port pg_port
  if [ -n "${MCPLEX_CLUSTER_PORT:-}" ]; then lb_port="$MCPLEX_CLUSTER_PORT"; fi
  [ -n "$lb_port" ] || free_port lb_port
  local port
  [ -n "$r1" ] || { free_port port && r1="127.0.0.1:$port"; }
  [ -n "$r2" ] || { free_port port && r2="127.0.0.1:$port"; }

  # PostgreSQL: a throwaway cluster owned by the user it runs as; password auth on TCP.
  if [ "$(id -u)" = 0 ]; then
    # The postgres user must reach DIR/pg: DIR becomes traversable (not readable) by others.
    chmod 711 "$dir"
  fi
  mkdir -p "$dir/pg"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/pg"; fi
  if [ ! -f "$dir/pg/password" ]; then
    od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$dir/pg/password"
  fi
  pgpass="$(cat "$dir/pg/password")"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/pg/password"; fi
  if [ ! -f "$pgdata/PG_VERSION" ]; then
    say "initdb in $pgdata"
    as_pg "$pg_bin/initdb" -D "$pgdata" -U mcplex --pwfile="$dir/pg/password" -E UTF8 \
      --auth-local=trust --auth-host=scram-sha-256 >"$logs/initdb.log" 2>&1 ||
      die "initdb failed: see $logs/initdb.log"
  fi
  as_pg mkdir -p "$pgsock"
  # pg_ctl's log is written by the server (the postgres user when run as root).
  as_pg touch "$dir/pg/postgres.log"
  # A port free when drawn can be taken before the server binds it (by another program
  # starting at once): then the server starts again on another.
  local attempt logged
  for attempt in 1 2 3 4 5; do
    logged="$(wc -l <"$dir/pg/postgres.log")"
    if as_pg "$pg_bin/pg_ctl" -D "$pgdata" -l "$dir/pg/postgres.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$pg_port -c unix_socket_directories=$pgsock" \
      start >>"$logs/pg_ctl.log" 2>&1; then
      break
    fi
    # The server's own log says why; it is gone with the directory once the caller cleans up.
    tail -n "+$((logged + 1))" "$dir/pg/postgres.log" >"$logs/pg-attempt.log" 2>/dev/null || true
    tail -n 20 "$logs/pg-attempt.log" >>"$logs/pg_ctl.log"
    if [ "$attempt" -lt 5 ] && bind_refused "$logs/pg-attempt.log"; then
      say "PostgreSQL's port $pg_port was taken; trying another"
      free_port pg_port
      continue
    fi
    die "PostgreSQL did not start: see $dir/pg/postgres.log"
  done
  if [ "$(as_pg "$pg_bin/psql" -h "$pgsock" -p "$pg_port" -U mcplex -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = 'mcplex'")" != 1 ]; then
    as_pg "$pg_bin/createdb" -h "$pgsock" -p "$pg_port" -U mcplex mcplex ||
      die "cannot create the database mcplex"
  fi
  store_url="postgres://mcplex:$pgpass@127.0.0.1:$pg_port/mcplex"

  # The replicas' store: PostgreSQL when this mcplex serves it, else one SQLite directory.
  local help
  help="$("$mcplex" serve --help 2>/dev/null || true)"
  if [ "${MCPLEX_CLUSTER_STORE:-}" != sqlite ] && [[ "$help" == *--store* ]]; then
    store_kind="postgres"
  else
    store_kind="sqlite"
  fi

  # One config for both replicas.
  if [ -n "${MCPLEX_CLUSTER_CONFIG:-}" ]; then
    cp "$MCPLEX_CLUSTER_CONFIG" "$dir/mcp_config.json"
  else
    fixture="$(dirname "$mcplex")/mcplex-fixture"
    [ -x "$fixture" ] || die "no $fixture for the default config: build it (cargo build --bins) or set MCPLEX_CLUSTER_CONFIG"
    printf '{\n  "mcpServers": {\n    "demo": {"command": "%s", "args": ["--name", "demo"]}\n  }\n}\n' \
      "$fixture" >"$dir/mcp_config.json"
  fi
  config="$dir/mcp_config.json"

  write_env() {
    echo "# scripts/cluster.sh: source with 'set -a; . $envfile; set +a' to use the mcplex CLI on this cluster"
    echo "MCPLEX_CONFIG='$config'"
    echo "MCPLEX_DATA_DIR='$dir/data'"
    if [ "$store_kind" = postgres ]; then echo "MCPLEX_STORE='$store_url'"; fi
    echo "CLUSTER_URL='http://$bind:$lb_port/mcp'"
    echo "CLUSTER_REPLICA_1='$r1'"
    echo "CLUSTER_REPLICA_2='$r2'"
    echo "CLUSTER_PG_PORT='$pg_port'"
    echo "CLUSTER_PG_URL='$store_url'"
    echo "CLUSTER_STORE_KIND='$store_kind'"
    echo "CLUSTER_MCPLEX='$mcplex'"
  }
  write_env >"$envfile"

  # The replicas, one after the other: the first creates the store's schema (and approves the
  # configured servers) before the second opens it. Each runs its own upstream connections; both
  # read and write one store.
  # A replica whose port was taken before it bound starts again on another (as PostgreSQL).
  local i pid authority logged tries deadline=$((SECONDS + ${MCPLEX_CLUSTER_TIMEOUT:-90}))
  for i in 1 2; do
    tries=0
    while :; do
      if [ "$i" = 1 ]; then authority="$r1"; else authority="$r2"; fi
      local store_args=(--data-dir "$dir/data")
      if [ "$store_kind" = postgres ]; then
        # Everything shared is in the store; a replica's data directory holds only its own.
        store_args=(--data-dir "$dir/data-r$i" --store "$store_url")
      fi
      touch "$logs/replica-$i.log"
      logged="$(wc -l <"$logs/replica-$i.log")"
      MCPLEX_LOG="${MCPLEX_LOG:-info}" setsid "$mcplex" serve --config "$config" --listen "$authority" \
        "${store_args[@]}" </dev/null >>"$logs/replica-$i.log" 2>&1 &
      pid=$!
      echo "$pid" >"$run/replica-$i.pid"
      if wait_ready "$pid" "$logs/replica-$i.log" replica_ready "$authority"; then break; fi
      tries=$((tries + 1))
      tail -n "+$((logged + 1))" "$logs/replica-$i.log" >"$logs/replica-attempt.log"
      if [ "$tries" -lt 5 ] && grep -q "cannot listen on $authority: .*in use" "$logs/replica-attempt.log"; then
        say "replica r$i's port ${authority##*:} was taken; trying another"
        free_port port
        if [ "$i" = 1 ]; then r1="127.0.0.1:$port"; else r2="127.0.0.1:$port"; fi
        write_env >"$envfile"
        continue
      fi
      die "replica r$i exited: see $logs/replica-$i.log"
    done
  done

  # HAProxy, in the foreground of its own session (its pid is the one to signal), started once
  # the replicas are ready so that its first health checks find them up.
  cp "$repo/deploy/haproxy.cfg" "$run/haproxy.cfg"
  haproxy -c -q -f "$run/haproxy.cfg" || die "deploy/haproxy.cfg does not parse"
  # Serving: HAProxy answers /readyz through each of the two replicas. A port of our choosing
  # taken before HAProxy bound it is chosen again (one the caller named is kept).
  local lb_host="$bind"
  [ "$lb_host" != 0.0.0.0 ] || lb_host=127.0.0.1
  tries=0
  while :; do
    touch "$logs/haproxy.log"
    logged="$(wc -l <"$logs/haproxy.log")"
    MCPLEX_LB_BIND="$bind:$lb_port" MCPLEX_REPLICA_1="$r1" MCPLEX_REPLICA_2="$r2" \
      setsid haproxy -db -f "$run/haproxy.cfg" </dev/null >>"$logs/haproxy.log" 2>&1 &
    pid=$!
    echo "$pid" >"$run/haproxy.pid"
    if wait_ready "$pid" "$logs/haproxy.log" lb_sees_both "$lb_host:$lb_port"; then break; fi
    tries=$((tries + 1))
    tail -n "+$((logged + 1))" "$logs/haproxy.log" >"$logs/haproxy-attempt.log"
    if [ "$tries" -lt 5 ] && [ -z "${MCPLEX_CLUSTER_PORT:-}" ] &&
      bind_refused "$logs/haproxy-attempt.log"; then
      say "HAProxy's port $lb_port was taken; trying another"
      free_port lb_port
      write_env >"$envfile"
      continue
    fi
    die "HAProxy exited: see $logs/haproxy.log"
  done
  print_urls
}

status() {
  local code=0 i authority
  if ! load_env; then
    say "not started in $dir"
    return 3
  fi
  if pg_running; then echo "postgresql  running  127.0.0.1:$CLUSTER_PG_PORT"; else
    echo "postgresql  stopped"
    code=3
  fi
  for i in 1 2; do
    if [ "$i" = 1 ]; then authority="$CLUSTER_REPLICA_1"; else authority="$CLUSTER_REPLICA_2"; fi
    if running "$run/replica-$i.pid" "$authority"; then
      echo "replica r$i  running  $authority  pid $(cat "$run/replica-$i.pid")  /readyz $(http_status "$authority" /readyz)"
    else
      echo "replica r$i  stopped  $authority"
      code=3
    fi
  done
  if running "$run/haproxy.pid" "$run/haproxy.cfg"; then
    echo "haproxy     running  $CLUSTER_URL  pid $(cat "$run/haproxy.pid")"
  else
    echo "haproxy     stopped"
    code=3
  fi
  return "$code"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) usage ;;
esac
