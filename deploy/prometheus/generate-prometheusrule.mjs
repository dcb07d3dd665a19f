#!/usr/bin/env node
// Writes components/prometheus-rules/prometheusrule.yaml from probegate-rules.yaml,
// so the Prometheus Operator's PrometheusRule and the plain rules file cannot
// drift: the rules are written once, here. kustomize cannot embed a file into
// a custom resource's field, hence a generated file that is checked in.
// `--check` exits 1 (naming the file) when the checked-in copy is stale;
// deploy/test/monitoring.test.ts runs it.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";

const here = path.dirname(fileURLToPath(import.meta.url));
const source = path.join(here, "probegate-rules.yaml");
const target = path.join(here, "../kustomize/components/prometheus-rules/prometheusrule.yaml");

export function renderPrometheusRule(rulesText) {
  const { groups } = parse(rulesText);
  const rule = {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: { name: "probegate", namespace: "probegate", labels: { "app.kubernetes.io/name": "probegate" } },
    spec: { groups },
  };
  return (
    "# GENERATED from deploy/prometheus/probegate-rules.yaml by\n" +
    "# `node deploy/prometheus/generate-prometheusrule.mjs`; edit that file, not this one.\n" +
    stringify(rule, { lineWidth: 0 })
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = renderPrometheusRule(readFileSync(source, "utf8"));
  if (process.argv.includes("--check")) {
    if (readFileSync(target, "utf8") !== text) {
      process.stderr.write(`${path.relative(process.cwd(), target)} is stale: run node deploy/prometheus/generate-prometheusrule.mjs\n`);
      process.exit(1);
    }
  } else writeFileSync(target, text);
}
