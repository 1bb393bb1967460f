"""Compiles every schema of an OpenAPI 3.1 document (read as JSON on stdin) with jsonschema_rs, a
JSON Schema validator written in Rust (its regular expressions are Rust's, not JavaScript's), and
validates the document's own examples with them. Prints one JSON object on stdout:
{"compiled": n, "examples": n, "problems": [...], "refusesNul": bool, "acceptsPair": bool}.
Run by compile-with-jsonschema-rs.test.ts."""
import json
import sys

import jsonschema_rs

document = json.load(sys.stdin)
components = document.get("components", {})
result = {"compiled": 0, "examples": 0, "problems": []}


def validator(schema, where):
    # A copy of the schema with the document's components beside it, so that its
    # "#/components/schemas/..." references resolve against this root.
    try:
        compiled = jsonschema_rs.Draft202012Validator({**schema, "components": components})
    except Exception as error:  # a pattern or keyword this validator cannot compile
        result["problems"].append(f"{where}: does not compile: {error}")
        return None
    result["compiled"] += 1
    return compiled


def check(schema, where, examples):
    """Compiles schema and every schema nested in its properties, and validates their examples."""
    compiled = validator(schema, where)
    if compiled is None:
        return
    for index, example in enumerate(list(examples) + list(schema.get("examples", []))):
        result["examples"] += 1
        errors = [error.message for error in compiled.iter_errors(example)]
        if errors:
            result["problems"].append(f"{where} example {index}: {errors}")
    for name, child in schema.get("properties", {}).items():
        check(child, f"{where}/properties/{name}", [])


for name, schema in components.get("schemas", {}).items():
    check(schema, f"#/components/schemas/{name}", [])


def media_examples(media):
    values = [example["value"] for example in media.get("examples", {}).values() if "value" in example]
    return values + ([media["example"]] if "example" in media else [])


for path, operations in document.get("paths", {}).items():
    for method, operation in operations.items():
        where = f"{method.upper()} {path}"
        for media_type, media in operation.get("requestBody", {}).get("content", {}).items():
            check(media.get("schema", {}), f"{where} request {media_type}", media_examples(media))
        for status, response in operation.get("responses", {}).items():
            for media_type, media in response.get("content", {}).items():
                check(media.get("schema", {}), f"{where} {status} {media_type}", media_examples(media))
            for header, spec in response.get("headers", {}).items():
                check(spec.get("schema", {}), f"{where} {status} header {header}", [])

# The published name pattern still says what it can: Rust refuses U+0000, and a surrogate pair
# (one code point outside the BMP) is a valid name.
plant = validator(components["schemas"]["Plant"], "Plant (controls)")
result["refusesNul"] = plant is not None and not plant.is_valid({"name": "a\u0000b"})
result["acceptsPair"] = plant is not None and plant.is_valid({"name": "Monstera \U0001F33F"})
print(json.dumps(result))
