"""explore/yaml_subset.py: the YAML an export writes reads back the same, here and in PyYAML."""
import yaml

from llm_codesign.explore.yaml_subset import dump, load


def test_yaml_subset_reads_what_it_writes():
    doc = {"a": 1, "b": "x: y", "c": {"d": [1, "two", {"e": None, "f": True}], "g": {}}, "h": ["--flag", "{\"k\": 1}"],
           "nvidia.com/gpu": "8", "i": 0.92}
    text = dump(doc)
    assert load(text) == doc == yaml.safe_load(text)


def test_nesting_by_indentation_or_in_flow_values_is_bounded():
    import pytest

    from llm_codesign.errors import MAX_NESTING, InputError

    def nested(n):  # n mappings, one inside the next, by indentation
        return "".join(" " * (2 * i) + "k:\n" for i in range(n - 1)) + " " * (2 * (n - 1)) + "k: 1\n"

    doc = load(nested(MAX_NESTING))
    for _ in range(MAX_NESTING - 1):
        doc = doc["k"]
    assert doc == {"k": 1}
    for text in (nested(MAX_NESTING + 1), nested(2000), "k: " + "[" * 100_000 + "]" * 100_000 + "\n"):
        with pytest.raises(InputError, match=f"^export: 'e.yaml' is not valid; a file whose arrays and tables nest at most {MAX_NESTING} "):
            load(text, "e.yaml")
