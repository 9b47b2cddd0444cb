"""The chart check's validation of rendered manifests (run by scripts/check-chart.sh).

Owns three checks of the files `helm template` wrote, one file per values case and Kubernetes
version (`<case>@<version>.yaml`):
- every object against that Kubernetes version's strict schema (kubernetes-validate: unknown
  fields refused); a ServiceMonitor, which Kubernetes does not define, against the Prometheus
  Operator's schema (servicemonitor.mjs, through node);
- the chart's promises that no schema states: non-root, read-only root filesystem, no
  capabilities, probes that send a Host the gateway accepts, one replica on SQLite, an HPA and
  a PodDisruptionBudget only with PostgreSQL, a config that parses and trusts the Service's
  names, read where it is mounted (no copy made at start);
- with a built mcplex binary (--mcplex), `mcplex config check` on every rendered config.
Prints one line per case and a summary; exits 1 on any failure.
"""

import argparse
import collections
import functools
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import kubernetes_validate
import kubernetes_validate.utils as kv_utils
import yaml

# Each call of validate() reads its schema files again; the schemas of one version do not change
# during a run.
kv_utils.schema_contents = functools.lru_cache(maxsize=None)(kv_utils.schema_contents)

SERVICE_MONITOR = ("monitoring.coreos.com/v1", "ServiceMonitor")
# The namespace scripts/check-chart.sh renders into (helm template --namespace).
NAMESPACE = "mcplex"


class Failures:
    def __init__(self):
        self.messages = []

    def add(self, where, message):
        self.messages.append(f"{where}: {message}")


def load_documents(path):
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def by_kind(documents, kind):
    return [doc for doc in documents if doc.get("kind") == kind]


def containers_of(deployment):
    spec = deployment["spec"]["template"]["spec"]
    return spec.get("initContainers", []) + spec["containers"]


def check_security(where, deployment, failures):
    pod = deployment["spec"]["template"]["spec"]
    pod_context = pod.get("securityContext", {})
    if pod_context.get("runAsNonRoot") is not True:
        failures.add(where, "the pod does not set runAsNonRoot: true")
    if pod_context.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        failures.add(where, "the pod's seccompProfile is not RuntimeDefault")
    if pod.get("automountServiceAccountToken") is not False:
        failures.add(where, "the pod mounts a service account token")
    for container in containers_of(deployment):
        name = f"{where}: container {container['name']}"
        context = container.get("securityContext", {})
        expected = {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
        }
        for key, value in expected.items():
            if context.get(key) is not value:
                failures.add(name, f"securityContext.{key} is not {json.dumps(value)}")
        if context.get("capabilities", {}).get("drop") != ["ALL"]:
            failures.add(name, "does not drop ALL capabilities")
        if context.get("capabilities", {}).get("add"):
            failures.add(name, "adds capabilities")


def check_probes(where, deployment, failures):
    gateway = deployment["spec"]["template"]["spec"]["containers"][0]
    expected_paths = {"startupProbe": "/healthz", "readinessProbe": "/readyz", "livenessProbe": "/healthz"}
    for probe, path in expected_paths.items():
        http = gateway.get(probe, {}).get("httpGet")
        if not http:
            failures.add(where, f"no {probe} over HTTP")
            continue
        if http.get("path") != path:
            failures.add(where, f"{probe} asks {http.get('path')}, not {path}")
        # The gateway's guard (crates/mcplex-surface/src/authority.rs) accepts loopback names and
        # trusted_hosts only; the kubelet would send the pod's IP address.
        hosts = [h["value"] for h in http.get("httpHeaders", []) if h["name"].lower() == "host"]
        if hosts != ["localhost"]:
            failures.add(where, f"{probe} does not send Host: localhost")


def check_api_key(where, case_documents, failures):
    """A given admin key reaches the gateway as a file from its Secret (never a variable, which
    stdio servers could be given), and is the one a ServiceMonitor presents."""
    deployment = by_kind(case_documents, "Deployment")[0]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    if "MCPLEX_API_KEY" in env:
        failures.add(where, "the admin API key is given in a variable")
    file = env.get("MCPLEX_API_KEY_FILE", {}).get("value")
    if file is None:
        return
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    directory, _, name = file.rpartition("/")
    volumes = {v["name"]: v for v in pod["volumes"]}
    secret = volumes.get(mounts.get(directory), {}).get("secret")
    if secret is None:
        failures.add(where, f"MCPLEX_API_KEY_FILE {file} is not in a mounted Secret")
        return
    items = {item["path"]: item["key"] for item in secret.get("items", [])}
    if name not in items:
        failures.add(where, f"the Secret {secret['secretName']} mounts no {name}")
        return
    given = {"name": secret["secretName"], "key": items[name]}
    for monitor in [d for d in case_documents if d.get("kind") == "ServiceMonitor"]:
        for endpoint in monitor["spec"]["endpoints"]:
            presented = endpoint.get("authorization", {}).get("credentials")
            if presented != given:
                failures.add(where, f"the ServiceMonitor presents {presented}, not the key given ({given})")


def check_replicas(where, case_documents, failures):
    deployment = by_kind(case_documents, "Deployment")[0]
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    postgres = "MCPLEX_STORE" in env
    token_key = env.get("MCPLEX_TOKEN_KEY")
    if token_key is not None and ("valueFrom" not in token_key or "value" in token_key):
        failures.add(where, "MCPLEX_TOKEN_KEY is not taken from a Secret")
    autoscalers = by_kind(case_documents, "HorizontalPodAutoscaler")
    budgets = by_kind(case_documents, "PodDisruptionBudget")
    if postgres:
        store = env["MCPLEX_STORE"]
        if "valueFrom" not in store or "value" in store:
            failures.add(where, "MCPLEX_STORE is not taken from a Secret")
        if "MCPLEX_TOKEN_KEY" not in env:
            failures.add(where, "PostgreSQL without MCPLEX_TOKEN_KEY")
        return "postgres", deployment["spec"].get("replicas"), len(autoscalers), len(budgets)
    if deployment["spec"].get("replicas") != 1:
        failures.add(where, "SQLite with replicas other than 1")
    if deployment["spec"]["strategy"]["type"] != "Recreate":
        failures.add(where, "SQLite with a strategy that runs two pods on the volume")
    if autoscalers or budgets:
        failures.add(where, "SQLite with an HPA or a PodDisruptionBudget")
    return "sqlite", 1, 0, 0


def check_traces(where, case_documents, failures):
    """Traces, when on: the collector's headers (an API key) only from a Secret, the sampler
    one the SDK knows. Returns whether they are on."""
    deployment = by_kind(case_documents, "Deployment")[0]
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    if "OTEL_EXPORTER_OTLP_ENDPOINT" not in env:
        return False
    headers = env.get("OTEL_EXPORTER_OTLP_HEADERS")
    if headers is not None and ("valueFrom" not in headers or "value" in headers):
        failures.add(where, "OTEL_EXPORTER_OTLP_HEADERS is not taken from a Secret")
    if env.get("OTEL_TRACES_SAMPLER", {}).get("value") != "parentbased_traceidratio":
        failures.add(where, "traces on without the parent-based ratio sampler")
    return True


def rendered_config(case_documents):
    maps = by_kind(case_documents, "ConfigMap")
    return maps[0]["data"]["mcp_config.json"] if maps else None


def check_config(where, case_documents, failures):
    text = rendered_config(case_documents)
    if text is None:
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        failures.add(where, f"the config is not JSON: {error}")
        return None
    service = by_kind(case_documents, "Service")[0]["metadata"]
    name, namespace = service["name"], NAMESPACE
    for host in (name, f"{name}.{namespace}.svc"):
        if host not in config.get("trusted_hosts", []):
            failures.add(where, f"trusted_hosts lacks {host}")
    for ingress in by_kind(case_documents, "Ingress"):
        for rule in ingress["spec"]["rules"]:
            if rule["host"] not in config["trusted_hosts"]:
                failures.add(where, f"trusted_hosts lacks the ingress host {rule['host']}")
    if "store" in config:
        failures.add(where, "the config holds the store's URL")
    return text


def check_config_read(where, case_documents, failures):
    """The gateway reads the mounted config itself (it hot-reloads it), with no copy made at
    start: a Host that is the pod's address needs no entry in trusted_hosts."""
    deployment = by_kind(case_documents, "Deployment")[0]
    if deployment["spec"]["template"]["spec"].get("initContainers"):
        failures.add(where, "an init container: the pod's address needs no trusting")
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    if env.get("MCPLEX_CONFIG") != "/etc/mcplex/mcp_config.json":
        failures.add(where, "the gateway does not read the mounted config")


def config_check(where, config_text, mcplex, failures):
    """`mcplex config check`, warnings included. Two of its errors are not the config's: no
    servers (the chart's default config) and a stdio server's command missing on this machine
    (it is the image that must have it)."""
    with tempfile.TemporaryDirectory() as scratch:
        path = pathlib.Path(scratch) / "mcp_config.json"
        path.write_text(config_text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCPLEX_")}
        env.update(HOME=scratch, MCPLEX_DATA_DIR=f"{scratch}/data")
        run = subprocess.run([mcplex, "config", "check", "--config", str(path)], env=env,
                             capture_output=True, text=True)
    findings = [line for line in run.stdout.splitlines() if line.startswith(("error:", "warning:"))]
    not_the_configs = ("no servers", "is not found on the PATH")
    unexpected = [line for line in findings if not any(text in line for text in not_the_configs)]
    if unexpected or (run.returncode != 0 and not findings):
        failures.add(where, "mcplex config check: " + " | ".join(unexpected or [run.stdout + run.stderr]))


def validate_schemas(where, documents, version, failures, monitors):
    for doc in documents:
        if (doc.get("apiVersion"), doc.get("kind")) == SERVICE_MONITOR:
            monitors.append({"where": where, "object": doc})
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = "/".join(str(p) for p in error.path)
            failures.add(where, f"{doc['kind']}/{doc['metadata']['name']}: {path}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError as error:
            failures.add(where, error.message)


def validate_service_monitors(monitors, node_tools, failures):
    if not monitors:
        return
    script = pathlib.Path(__file__).with_name("servicemonitor.mjs")
    run = subprocess.run(["node", str(script), str(node_tools)], input=json.dumps(monitors),
                         capture_output=True, text=True)
    for line in run.stdout.splitlines():
        if line.startswith("invalid "):
            failures.add("ServiceMonitor", line)
    if run.returncode != 0 and not failures.messages:
        failures.add("ServiceMonitor", f"servicemonitor.mjs failed: {run.stderr.strip()}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("rendered", type=pathlib.Path)
    parser.add_argument("--node-tools", type=pathlib.Path, required=True)
    parser.add_argument("--mcplex", help="a built mcplex binary for `config check`")
    args = parser.parse_args()

    failures = Failures()
    monitors = []
    objects = collections.Counter()
    files = collections.Counter()
    versions = set()
    by_case = collections.defaultdict(dict)
    for path in sorted(args.rendered.glob("*@*.yaml")):
        case, version = path.stem.split("@")
        by_case[case][version] = load_documents(path)
    for case, renders in by_case.items():
        for version, documents in sorted(renders.items()):
            validate_schemas(f"{case}@{version}", documents, version, failures, monitors)
            objects[version] += len(documents)
            files[version] += 1
            versions.add(version)
        # The promises are the same for every version's render: checked on one.
        documents = next(iter(renders.values()))
        for deployment in by_kind(documents, "Deployment"):
            check_security(case, deployment, failures)
            check_probes(case, deployment, failures)
        store, replicas, autoscalers, budgets = check_replicas(case, documents, failures)
        check_api_key(case, documents, failures)
        config_text = check_config(case, documents, failures)
        check_config_read(case, documents, failures)
        traces = check_traces(case, documents, failures)
        checked = "config not rendered (existing Secret)"
        if config_text is not None:
            checked = "config is JSON"
            if args.mcplex:
                config_check(case, config_text, args.mcplex, failures)
                checked = "config passes mcplex config check"
        kinds = ", ".join(sorted({f"{d['kind']}" for d in documents}))
        print(f"  {case}: {store}, replicas {replicas if replicas is not None else 'by HPA'}, "
              f"{autoscalers} HPA, {budgets} PDB, {checked}"
              f"{', traces exported' if traces else ''}; {len(documents)} objects ({kinds})")
    validate_service_monitors(monitors, args.node_tools, failures)

    if not by_case:
        failures.add(str(args.rendered), "no rendered manifests")
    total_objects = sum(objects.values())
    total_files = sum(files.values())
    print(f"  schemas: {total_files} rendered manifests ({total_objects} objects) against Kubernetes "
          f"{', '.join(sorted(versions, key=lambda v: [int(p) for p in v.split('.')]))} (strict);"
          f" {len(monitors)} ServiceMonitor objects against the Prometheus Operator's schema")
    if failures.messages:
        for message in failures.messages:
            print(f"FAILED {message}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
