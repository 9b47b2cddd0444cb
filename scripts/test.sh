#!/usr/bin/env bash
# The whole test suite: installs what the tests need (idempotent), then runs every test once.
#   - tests/py/requirements.txt into .venv: the official MCP Python SDK client, mcp-server-time
#   - tests/node/package-lock.json into tests/node/node_modules: @modelcontextprotocol/server-everything
#   - every workspace binary, then cargo nextest (cargo test without nextest) over the workspace
set -euo pipefail
cd "$(dirname "$0")/.."

if ! .venv/bin/python -c 'import mcp, mcp_server_time' 2>/dev/null; then
  echo "test.sh: installing the Python test dependencies into .venv" >&2
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/py/requirements.txt
fi

if [ ! -f tests/node/node_modules/@modelcontextprotocol/server-everything/package.json ]; then
  echo "test.sh: installing the npm test servers into tests/node" >&2
  (cd tests/node && npm ci --silent --no-audit --no-fund)
fi

# The integration tests run binaries of other workspace packages (mcplex-fixture), which a test
# build of one package does not produce.
cargo build --workspace --bins

if cargo nextest --version >/dev/null 2>&1; then
  exec cargo nextest run --workspace --no-fail-fast "$@"
else
  exec cargo test --workspace --no-fail-fast "$@"
fi
