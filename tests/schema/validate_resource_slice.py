#!/usr/bin/python3
"""Validates `canhazgpu devices --json` against the official resource.k8s.io/v1
OpenAPI schema (shared/schemas), strictly: every object schema that lists its
properties rejects any other property, so a misspelt or invented field fails.
Another kind of the document (a ResourceClaim as the API server stored it)
is validated the same way when its schema name is given.

Usage: validate_resource_slice.py OPENAPI_JSON OBJECT_JSON [SCHEMA_NAME]
(SCHEMA_NAME defaults to io.k8s.api.resource.v1.ResourceSlice.)
Exit 0 when valid, 1 with one line per error otherwise.
"""
import json
import sys

import jsonschema

ROOT = "io.k8s.api.resource.v1.ResourceSlice"


def strict(node):
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            strict(value)
    elif isinstance(node, list):
        for value in node:
            strict(value)


def main():
    with open(sys.argv[1]) as f:
        openapi = json.load(f)
    with open(sys.argv[2]) as f:
        slice_object = json.load(f)
    schemas = openapi["components"]["schemas"]
    strict(schemas)
    root = sys.argv[3] if len(sys.argv) > 3 else ROOT
    schema = {"components": {"schemas": schemas}, "$ref": "#/components/schemas/" + root}
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(slice_object), key=lambda e: list(e.absolute_path))
    for error in errors:
        path = "/".join(str(p) for p in error.absolute_path)
        print(f"{path or '(root)'}: {error.message}")
    if root == ROOT:
        devices = slice_object.get("spec", {}).get("devices", [])
        print(f"resource-slice-schema: {len(devices)} devices, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
