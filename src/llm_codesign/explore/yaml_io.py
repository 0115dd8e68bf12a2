"""The YAML of the exports and of the engines' configuration files, through PyYAML. vLLM (`vllm serve
--config`: vllm/utils/argparse_utils.py, FlexibleArgumentParser.load_config_file), SGLang (`--config`:
srt/server_args_config_parser.py) and TensorRT-LLM (`--extra_llm_api_options`: tensorrt_llm/commands/serve.py)
each read theirs with yaml.safe_load, so a file means here what it means to its engine (YAML 1.1: `yes`,
`on` and `true` are true, `no`, `off` and `false` false)."""
from __future__ import annotations

import yaml

from llm_codesign.errors import InputError, parse_nested

# libyaml's parser and emitter where PyYAML was built with them (its wheels are), else PyYAML's own: the same
# documents, ~10x faster (0.3 against 3.6 ms to read a Dynamo manifest)
_BaseLoader, _Dumper = getattr(yaml, "CSafeLoader", yaml.SafeLoader), getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Loader(_BaseLoader):
    """safe_load's loader, refusing aliases (`*name`: a few nested ones expand to billions of values for
    any reader that walks the result) and keys that are not names."""

    def construct_object(self, node, deep=False):
        if node in self.constructed_objects:  # a node met twice: an alias's (or a merge's) second use, marked where it is anchored
            raise yaml.constructor.ConstructorError(None, None, "a value an alias repeats (&name, *name), which these files have no use for",
                                                    node.start_mark)
        return super().construct_object(node, deep)

    def construct_mapping(self, node, deep=False):
        out = super().construct_mapping(node, deep)
        bad = next((k for k in out if not isinstance(k, str)), None)
        if bad is not None:
            raise yaml.constructor.ConstructorError(None, None, f"the key {bad!r}, not a name", node.start_mark)
        return out


# a date reads as the text it is written as: the engines pass every scalar on as str(value), and an error names it as written
_Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


def _parse(text: str):
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        if "nesting depth" in str(getattr(e, "problem", "")):  # libyaml's own bound (1000 levels): too deep, as a RecursionError is
            raise RecursionError from None
        raise


def dump(obj) -> str:
    """Block YAML, keys in their order, each value on one line (a string quoted where it would read as another type)."""
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1 << 16).rstrip("\n")


def load(text: str, origin: str = "export"):
    """The document in `text` ({} for none); `origin` names the file in errors (bad YAML, nesting too deep)."""
    try:
        doc = parse_nested(_parse, text, "export", origin)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError("export", origin, f"valid YAML ({getattr(e, 'problem', None) or type(e).__name__}{where})") from None
    return {} if doc is None else doc
