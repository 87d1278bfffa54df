#!/usr/bin/python3
"""Validates a CDI spec against the official CDI JSON schema.

Usage: validate_cdi_spec.py SCHEMA_DIR SPEC_JSON
SCHEMA_DIR holds schema.json and defs.json (tests/fixtures/cdi).
Exit 0 when valid, 1 with one line per error otherwise.
"""
import json
import pathlib
import sys
import warnings

import jsonschema

# RefResolver is deprecated in newer jsonschema releases, and the only API
# Debian 12's release (4.10) has.
warnings.filterwarnings("ignore", category=DeprecationWarning)


def main():
    schema_dir = pathlib.Path(sys.argv[1]).resolve()
    with open(schema_dir / "schema.json") as f:
        schema = json.load(f)
    with open(schema_dir / "defs.json") as f:
        defs = json.load(f)
    with open(sys.argv[2]) as f:
        spec = json.load(f)
    # schema.json refers to "defs.json#/definitions/..." relative to itself.
    resolver = jsonschema.RefResolver(
        base_uri=(schema_dir / "schema.json").as_uri(),
        referrer=schema,
        store={(schema_dir / "defs.json").as_uri(): defs},
    )
    validator = jsonschema.Draft7Validator(schema, resolver=resolver)
    errors = sorted(validator.iter_errors(spec), key=lambda e: list(e.absolute_path))
    for error in errors:
        path = "/".join(str(p) for p in error.absolute_path)
        print(f"{path or '(root)'}: {error.message}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
