"""Autoscaling: the replica rule over what a deployment's vLLM replicas report (rule.py), the
same rule as Prometheus recording rules and alerts (promql.py), and the configs autoscalers and
routers read, built from a plan (manifests.py)."""
