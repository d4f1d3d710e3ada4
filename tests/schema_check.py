"""A small JSON Schema validator for the subset schema/dashfloat-events.schema.json uses.

jsonschema is not a dependency of DashFloat or its tests; the event schema uses only these
keywords, and anything else in a schema is an error here (so the subset cannot grow
unnoticed): $ref (to #/$defs/...), oneOf, anyOf, type, const, enum, properties, required,
additionalProperties (false or absent), items, minimum, pattern, and the annotations
$schema, title, description, x-schema-version, $defs.
"""

from __future__ import annotations

import re

KNOWN = {"$ref", "oneOf", "anyOf", "type", "const", "enum", "properties", "required",
         "additionalProperties", "items", "minimum", "pattern", "$schema", "title", "description",
         "x-schema-version", "$defs"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def errors(value, schema: dict, root: dict | None = None, path: str = "$") -> list[str]:
    """Every way `value` breaks `schema` ([] when it is valid)."""
    root = root if root is not None else schema
    unknown = set(schema) - KNOWN
    if unknown:
        raise ValueError(f"{path}: schema keywords this validator does not know: {sorted(unknown)}")
    out: list[str] = []
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"{path}: only #/$defs/ references: {ref}")
        out += errors(value, root["$defs"][ref[len("#/$defs/"):]], root, path)
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not errors(value, s, root, path)]
        if len(matching) != 1:
            if isinstance(value, dict) and "type" in value:  # say why it fails its own type
                own = [s for s in schema["oneOf"] if s.get("$ref", "").endswith("/" + str(value["type"]))]
                if own:
                    return errors(value, own[0], root, path)
            out.append(f"{path}: matches {len(matching)} of oneOf, not exactly 1")
    if "anyOf" in schema and not any(not errors(value, s, root, path) for s in schema["anyOf"]):
        out.append(f"{path}: matches none of anyOf: {value!r:.80}")
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[k](value) for k in kinds):
            out.append(f"{path}: {value!r:.80} is not {schema['type']}")
            return out
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: {value!r:.80} is not {schema['const']!r}")
    if "enum" in schema and (value not in schema["enum"] or isinstance(value, bool) != any(
            isinstance(e, bool) for e in schema["enum"] if e == value)):
        out.append(f"{path}: {value!r:.80} is not one of {schema['enum']}")
    if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
        out.append(f"{path}: {value} is below {schema['minimum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        out.append(f"{path}: {value!r:.80} does not match {schema['pattern']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                out.append(f"{path}: {key!r} is missing")
        for key, item in value.items():
            if key in props:
                out += errors(item, props[key], root, f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                out.append(f"{path}: {key!r} is not allowed")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += errors(item, schema["items"], root, f"{path}[{i}]")
    return out


def check_stream(events: list[dict], schema: dict) -> dict:
    """A whole run's events: each valid; seq 1, 2, ... without gaps; one session id; the
    first is session.start and the last the only result, both with schema_version. Returns
    the result."""
    assert events, "no events"
    for ev in events:
        found = errors(ev, schema)
        assert not found, (ev, found)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), [e["seq"] for e in events]
    assert len({e["session_id"] for e in events}) == 1
    types = [e["type"] for e in events]
    assert types[0] == "session.start" and "schema_version" in events[0], types[:3]
    assert types.count("result") == 1 and types[-1] == "result", types[-3:]
    return events[-1]
