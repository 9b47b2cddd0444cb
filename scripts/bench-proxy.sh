#!/usr/bin/env bash
# scripts/bench-proxy.sh [OUT_DIR]
#
# tools/call throughput and latency of mcplex against a peer proxy, side by side in one run:
# wrk (scripts/bench-proxy.lua) → proxy → one stdio upstream (the `mcplex-fixture` binary, its
# `echo` tool), at 1 and 32 connections; and the upstream alone (the same fixture serving
# stateless HTTP) as a ceiling. Targets alternate within each round, so a noisy machine hurts
# them alike; compare ratios within a round. For each run it prints calls/s, p50, p99, wrong
# answers and errors, and the proxy process's CPU per call (utime+stime from /proc over the run).
#
# wrk runs a thread per core (at most one per connection); answers are matched to requests by id
# within a thread, so connections share them (32 threads on two cores spent CPU that the proxy
# under test could use). All
# connections share one MCP session opened beforehand, so each proxy runs one upstream (a proxy
# that starts an upstream per session would run one per connection otherwise); set
# BENCH_SESSION_PER_CONNECTION=1 to give each connection its own session (and wrk thread).
# mcplex takes at most 64 requests in flight in one session: more connections than that need
# a session each.
#
# Needs: wrk, curl, node (for the peer), a release build of mcplex and mcplex-fixture.
# Environment:
#   MCPLEX_BIN        the mcplex binary (default: $CARGO_TARGET_DIR or target/, release)
#   FIXTURE_BIN       the fixture binary (default: beside MCPLEX_BIN)
#   BASELINE_BIN      another mcplex binary (e.g. a build of main) run as the target `baseline`,
#                     side by side with MCPLEX_BIN, to compare two builds in one run
#   PEER_PROXY        the peer's entry point, run with node (e.g. the `mcp-proxy` npm package's
#                     dist/bin/mcp-proxy.mjs); unset: the peer is left out
#   BENCH_DURATION    seconds per run (default 10)
#   BENCH_ROUNDS      rounds (default 2)
#   BENCH_CONNECTIONS connection counts (default "1 32")
#   BENCH_TARGETS     which targets (default "upstream mcplex peer")
#   BENCH_THREADS     wrk threads (default: the number of cores)
#   BENCH_UPSTREAM_ARGS more arguments for the stdio upstream behind each proxy, e.g.
#                     "--rmcp-like-stdio" for an upstream whose stdio costs as much as rmcp's does
#   BENCH_PERF        set to record each mcplex run with `perf record --call-graph dwarf` into
#                     OUT_DIR/perf-<target>-<connections>-<round>.data (CPU per call then includes
#                     perf's own cost: measure with it unset)
#   BENCH_INSTRUCTIONS set to also count, after the rounds, the instructions each mcplex build
#                     executes per call under valgrind's callgrind (one connection, a gateway of
#                     its own, counted only while wrk runs): a figure a noisy or virtual machine
#                     (no hardware counters here) does not move, so a regression shows. Needs
#                     valgrind; the dump is OUT_DIR/callgrind-<target>.out (callgrind_annotate).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-${TMPDIR:-/tmp}/mcplex-bench-proxy}"
mkdir -p "$out"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
mcplex="${MCPLEX_BIN:-$target_dir/release/mcplex}"
fixture="${FIXTURE_BIN:-$(dirname "$mcplex")/mcplex-fixture}"
duration="${BENCH_DURATION:-10}"
rounds="${BENCH_ROUNDS:-2}"
connections="${BENCH_CONNECTIONS:-1 32}"
targets="${BENCH_TARGETS:-upstream mcplex peer}"
lua="$repo/scripts/bench-proxy.lua"

say() { echo "bench-proxy: $*" >&2; }
die() {
  say "$*"
  exit 1
}
command -v wrk >/dev/null || die "wrk not found (Debian: apt-get install wrk)"
[ -x "$mcplex" ] || die "$mcplex not found: cargo build --release -p mcplex -p mcplex-fixtures"
[ -x "$fixture" ] || die "$fixture not found"
if [ -z "${PEER_PROXY:-}" ]; then
  targets="${targets//peer/}"
fi
if [ -n "${BASELINE_BIN:-}" ] && [[ " $targets " != *" baseline "* ]]; then
  targets="${targets/mcplex/baseline mcplex}"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

wait_port() {
  local port=$1
  for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  die "nothing listens on port $port"
}

# --- the targets ---------------------------------------------------------------------------
upstream_port=$(free_port)
"$fixture" --http "127.0.0.1:$upstream_port" 2>"$out/upstream.log" &
pids+=($!)
upstream_pid=$!

# The upstream's extra arguments: words split at spaces, never globbed; JSON-quoted for mcplex.
read -ra upstream_args <<<"${BENCH_UPSTREAM_ARGS:-}"
upstream_json_args=$(python3 -c 'import json, sys; print("".join(", " + json.dumps(w) for w in sys.argv[1:]))' \
  "${upstream_args[@]}")

# Starts `mcplex serve` ($1) in front of the fixture on stdio; sets port and pid.
start_mcplex() {
  local bin=$1 name=$2
  port=$(free_port)
  cat >"$out/$name.json" <<EOF
{"listen": "127.0.0.1:$port", "data_dir": "$out/$name-data", "audit_retention_days": 1,
 "max_sessions": 1000, "mcpServers": {"fixture": {"command": "$fixture", "args": ["--name", "fixture"$upstream_json_args]}}}
EOF
  MCPLEX_LOG=warn "$bin" serve --config "$out/$name.json" >"$out/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
}
start_mcplex "$mcplex" mcplex
mcplex_port=$port
mcplex_pid=$pid
if [[ " $targets " == *" baseline "* ]]; then
  start_mcplex "$BASELINE_BIN" baseline
  baseline_port=$port
  baseline_pid=$pid
fi

if [[ " $targets " == *" peer "* ]]; then
  peer_port=$(free_port)
  node "$PEER_PROXY" --host 127.0.0.1 --port "$peer_port" --server stream -- "$fixture" --name fixture \
    "${upstream_args[@]}" \
    >"$out/peer.log" 2>&1 &
  pids+=($!)
  peer_pid=$!
fi

wait_port "$upstream_port"
for ready_port in "$mcplex_port" ${baseline_port:-}; do
  wait_port "$ready_port"
  for _ in $(seq 1 300); do
    curl -fsS "http://127.0.0.1:$ready_port/readyz?all" >/dev/null 2>&1 && break
    sleep 0.2
  done
done
[ -n "${peer_pid:-}" ] && wait_port "$peer_port"

# port path tool pid, per target
describe() {
  case $1 in
  upstream) echo "$upstream_port /mcp echo $upstream_pid" ;;
  mcplex) echo "$mcplex_port /mcp/all fixture__echo $mcplex_pid" ;;
  baseline) echo "$baseline_port /mcp/all fixture__echo $baseline_pid" ;;
  peer) echo "$peer_port /mcp echo $peer_pid" ;;
  esac
}

# Opens an MCP session at port/path and prints its id (nothing for a stateless server).
open_session() {
  local port=$1 path=$2 headers
  headers=$(curl -sS -D - -o /dev/null "http://127.0.0.1:$port$path" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench-proxy","version":"1"}}}')
  local session
  session=$(printf '%s' "$headers" | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
  if [ -n "$session" ]; then
    curl -sS -o /dev/null "http://127.0.0.1:$port$path" -H "Mcp-Session-Id: $session" \
      -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
      -H 'MCP-Protocol-Version: 2025-06-18' \
      -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  fi
  echo "$session"
}

# utime+stime of a process in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Busy clock ticks of the whole machine (every process, the kernel's included).
machine_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
# wrk threads for a connection count (a session per connection needs a thread per connection:
# a wrk thread sends one set of headers).
threads_for() {
  local conns=$1 threads=${BENCH_THREADS:-$(nproc)}
  [ "$threads" -ge 1 ] || threads=1
  [ "${BENCH_SESSION_PER_CONNECTION:-0}" = 1 ] && threads=$conns
  echo $((threads < conns ? threads : conns))
}
ticks_per_s=$(getconf CLK_TCK)

run() {
  local target=$1 conns=$2 round=$3
  read -r port path tool pid <<<"$(describe "$target")"
  local sessions="" count=1
  [ "${BENCH_SESSION_PER_CONNECTION:-0}" = 1 ] && count=$conns
  for _ in $(seq 1 "$count"); do sessions="$sessions $(open_session "$port" "$path")"; done
  # Warm up (connections, lazy statics, the JIT of the peer).
  MCP_PATH=$path MCP_TOOL=$tool MCP_SESSIONS=$sessions \
    wrk -t "$(threads_for "$conns")" -c "$conns" -d 2 -s "$lua" "http://127.0.0.1:$port" >/dev/null 2>&1 || true
  local before after result perf_pid=""
  if [ -n "${BENCH_PERF:-}" ] && [[ "$target" == mcplex || "$target" == baseline ]]; then
    perf record -q --call-graph dwarf,16384 -F 499 -p "$pid" \
      -o "$out/perf-$target-$conns-$round.data" -- sleep "$duration" 2>/dev/null &
    perf_pid=$!
  fi
  before=$(cpu_ticks "$pid")
  local machine_before machine_after
  machine_before=$(machine_ticks)
  result=$(MCP_PATH=$path MCP_TOOL=$tool MCP_SESSIONS=$sessions \
    wrk -t "$(threads_for "$conns")" -c "$conns" -d "$duration" --timeout 10s -s "$lua" \
      "http://127.0.0.1:$port" | tee "$out/wrk-$target-$conns-$round.txt" | grep '^RESULT')
  after=$(cpu_ticks "$pid")
  machine_after=$(machine_ticks)
  [ -n "$perf_pid" ] && wait "$perf_pid"
  local calls cpu_us
  calls=$(sed -E 's/.* calls=([0-9]+).*/\1/' <<<"$result")
  cpu_us=$(awk -v t=$((after - before)) -v m=$((machine_after - machine_before)) \
    -v hz="$ticks_per_s" -v n="$calls" -v d="$duration" \
    'BEGIN { printf "%.0f %.2f %.2f", (n > 0 ? t / hz * 1e6 / n : 0), t / hz / d, m / hz / d }')
  read -r per_call cores machine_cores <<<"$cpu_us"
  printf '%-5s %-9s %5s  %s cpu_us_per_call=%s cores=%s machine_cores=%s\n' "$round" "$target" \
    "$conns" "${result#RESULT }" "$per_call" "$cores" "$machine_cores" | tee -a "$out/results.txt"
}

say "mcplex pid $mcplex_pid${baseline_pid:+, baseline pid $baseline_pid}, upstream pid $upstream_pid${peer_pid:+, peer pid $peer_pid}; ${duration}s runs, $rounds rounds"
: >"$out/results.txt"
for round in $(seq 1 "$rounds"); do
  for conns in $connections; do
    for target in $targets; do
      run "$target" "$conns" "$round"
    done
  done
done
# Instructions per call under callgrind: a gateway of its own, started with instrumentation off,
# counted only over one wrk run at one connection (valgrind runs one thread at a time, so more
# connections would only queue).
instructions() {
  local target=$1 bin=$2
  command -v valgrind >/dev/null || die "valgrind not found (Debian: apt-get install valgrind)"
  local cg_port cg_pid session result calls totals
  cg_port=$(free_port)
  cat >"$out/$target-callgrind.json" <<EOF
{"listen": "127.0.0.1:$cg_port", "data_dir": "$out/$target-callgrind-data", "audit_retention_days": 1,
 "max_sessions": 1000, "mcpServers": {"fixture": {"command": "$fixture", "args": ["--name", "fixture"$upstream_json_args]}}}
EOF
  rm -f "$out/callgrind-$target.out"*
  MCPLEX_LOG=warn valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$out/callgrind-$target.out" \
    "$bin" serve --config "$out/$target-callgrind.json" >"$out/$target-callgrind.log" 2>&1 &
  cg_pid=$!
  pids+=("$cg_pid")
  wait_port "$cg_port"
  for _ in $(seq 1 300); do
    curl -fsS "http://127.0.0.1:$cg_port/readyz?all" >/dev/null 2>&1 && break
    sleep 0.2
  done
  session=$(open_session "$cg_port" /mcp/all)
  MCP_PATH=/mcp/all MCP_TOOL=fixture__echo MCP_SESSIONS=$session \
    wrk -t 1 -c 1 -d 2 -s "$lua" "http://127.0.0.1:$cg_port" >/dev/null 2>&1 || true
  callgrind_control -i on "$cg_pid" >/dev/null
  result=$(MCP_PATH=/mcp/all MCP_TOOL=fixture__echo MCP_SESSIONS=$session \
    wrk -t 1 -c 1 -d "$duration" --timeout 10s -s "$lua" "http://127.0.0.1:$cg_port" | tee "$out/wrk-instructions-$target.txt" | grep "^RESULT")
  callgrind_control -i off "$cg_pid" >/dev/null
  # Instrumentation was on only during the run: the dump written at exit holds just that.
  kill "$cg_pid" 2>/dev/null || true
  wait "$cg_pid" 2>/dev/null || true
  calls=$(sed -E 's/.* calls=([0-9]+).*/\1/' <<<"$result")
  totals=$(awk '/^totals:/ {print $2}' "$out/callgrind-$target.out")
  awk -v target="$target" -v n="$calls" -v t="${totals:-0}" \
    'BEGIN { printf "instr %-9s     1  calls=%d instructions_per_call=%.0f\n", target, n, (n > 0 ? t / n : 0) }' |
    tee -a "$out/results.txt"
}

if [ -n "${BENCH_INSTRUCTIONS:-}" ]; then
  if [ -n "${baseline_pid:-}" ]; then instructions baseline "$BASELINE_BIN"; fi
  instructions mcplex "$mcplex"
fi
say "results in $out/results.txt"
