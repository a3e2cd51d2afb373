#!/usr/bin/env python3
"""Converts YAML files to JSON as an editor's YAML reader sees them, for the JSON Schema
check of ktrain.yaml (tests/e2e/project_schema.sh).

    python3 yaml_json.py OUT_DIR FILE...

For each FILE, writes OUT_DIR/<name>.json (<name>: FILE's name without .yaml), or
OUT_DIR/<name>.refused with the reason when FILE is not one YAML document that JSON
can hold: not UTF-8 text, a syntax error, several documents, a key given twice, or
aliases that expand to more than MAX_ALIAS_VALUES values (editors' YAML readers refuse
those too: yaml-language-server's allows 100 aliases).

Plain scalars are resolved with YAML 1.2's core schema, as yaml-language-server (and
ktrain) read them: true/false and null (and their capitalised forms), integers and
floats; everything else, `off`, `yes` and `2024-01-01` included, is a string (PyYAML's
own resolvers follow YAML 1.1, where `off` is false). Keys are kept as written.
"""
import json
import os
import re
import sys

import yaml


class Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core schema resolution and no duplicate keys."""


Loader.yaml_implicit_resolvers = {}
Loader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))
Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"))
Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))


def construct_int(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def construct_mapping(loader, node):
    loader.flatten_mapping(node)
    out = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise yaml.constructor.ConstructorError(
                None, None, "a key that is not a scalar", key_node.start_mark)
        key = key_node.value  # as written, as ktrain reads it
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
    return out


Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
Loader.add_constructor("tag:yaml.org,2002:map", construct_mapping)

# What aliases may add to a document, as ktrain counts it (cli/project/tree.cc).
MAX_ALIAS_VALUES = 100_000


def check_aliases(root):
    """Raises ValueError when the aliases under `root` (a composed node, whose aliases
    share the node they name) expand to more than MAX_ALIAS_VALUES values, or without
    end; the sizes are counted, not expanded."""
    sizes = {}
    open_nodes = set()

    def size(node):
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise ValueError("not one YAML document: an alias inside the node it names")
        open_nodes.add(key)
        n = 1
        if isinstance(node, yaml.SequenceNode):
            n += sum(size(item) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            n += sum(size(k) + size(v) for k, v in node.value)
        open_nodes.discard(key)
        sizes[key] = n
        return n

    if root is not None and size(root) - len(sizes) > MAX_ALIAS_VALUES:
        raise ValueError(f"not one YAML document: too many alias expansions "
                         f"(more than {MAX_ALIAS_VALUES} values)")


def convert(path):
    """The JSON text of the YAML file at `path`; raises ValueError saying why not."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ValueError(f"cannot read: {e.strerror}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8: {e.reason} at byte {e.start}")
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        check_aliases(node)
        value = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        raise ValueError("not one YAML document: " + " ".join(str(e).split()))
    finally:
        loader.dispose()
    try:
        return json.dumps(value, allow_nan=False, indent=2) + "\n"
    except (TypeError, ValueError) as e:
        raise ValueError(f"no JSON form: {e}")


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: yaml_json.py OUT_DIR FILE...")
    out_dir = sys.argv[1]
    for path in sys.argv[2:]:
        name = os.path.basename(path.rstrip("/"))
        if name.endswith(".yaml"):
            name = name[: -len(".yaml")]
        try:
            text = convert(path)
        except ValueError as e:
            with open(os.path.join(out_dir, name + ".refused"), "w") as f:
                f.write(str(e) + "\n")
            continue
        with open(os.path.join(out_dir, name + ".json"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
