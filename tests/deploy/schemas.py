"""The schemas the deploy tests and the generated configs' tests validate against: the Kubernetes
version kubernetes-validate checks built-in objects at, and the prometheus-operator resources
(ServiceMonitor, PrometheusRule) as the fields kvplan writes, no others."""

from __future__ import annotations

K8S_VERSION = "1.33.0"


def custom_resource(required: list[str], properties: dict) -> dict:
    """The schema of a custom resource: the Kubernetes envelope around a spec of these fields
    and no others."""
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "spec": {
                "type": "object",
                "additionalProperties": False,
                "required": required,
                "properties": properties,
            }
        },
    }


SERVICE_MONITOR = custom_resource(
    ["selector", "endpoints"],
    {
        "selector": {"type": "object"},
        "endpoints": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["port"],
                "properties": {
                    "port": {"type": "string"},
                    "path": {"type": "string"},
                    "interval": {"type": "string"},
                    "honorLabels": {"type": "boolean"},
                },
            },
        },
    },
)
ALERTING_RULE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["alert", "expr", "labels", "annotations"],
    "properties": {
        "alert": {"type": "string"},
        "expr": {"type": "string"},
        "for": {"type": "string"},
        "labels": {"type": "object", "required": ["severity"]},
        "annotations": {"type": "object", "required": ["summary"]},
    },
}
RECORDING_RULE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["record", "expr"],
    "properties": {
        "record": {"type": "string", "pattern": "^[a-zA-Z_:][a-zA-Z0-9_:]*$"},
        "expr": {"type": "string"},
        "labels": {"type": "object"},
    },
}
PROMETHEUS_RULE = custom_resource(
    ["groups"],
    {
        "groups": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "rules"],
                "properties": {
                    "name": {"type": "string"},
                    "rules": {"type": "array", "items": {"oneOf": [ALERTING_RULE, RECORDING_RULE]}},
                },
            },
        }
    },
)
CRD_SCHEMAS = {"ServiceMonitor": SERVICE_MONITOR, "PrometheusRule": PROMETHEUS_RULE}
