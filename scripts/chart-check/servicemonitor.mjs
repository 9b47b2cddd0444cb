// The chart check's ServiceMonitor validation (called by validate.py): each object read from
// stdin as JSON ([{where, object}]) is checked against the Prometheus Operator's
// monitoring.coreos.com/v1 ServiceMonitor schema, compiled from the operator's own CRD by
// @kubernetes-models/prometheus-operator (installed by scripts/check-chart.sh into the
// directory given as the first argument). Types, enums, patterns and required fields are
// checked; unknown fields are not (the CRD does not refuse them: the API server prunes them).
// Prints "valid WHERE" or "invalid WHERE: …" per object; exits 1 if any is invalid.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const tools = process.argv[2];
const model = join(tools, "node_modules/@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor.js");
const { ServiceMonitor } = await import(pathToFileURL(model).href);

let invalid = 0;
for (const { where, object } of JSON.parse(readFileSync(0, "utf8"))) {
  try {
    new ServiceMonitor(object).validate();
    console.log(`valid ${where}`);
  } catch (error) {
    invalid += 1;
    console.log(`invalid ${where}: ${String(error.message).replace(/\s+/g, " ")}`);
  }
}
process.exit(invalid ? 1 : 0);
