"""explore/yaml_subset.py: the YAML an export writes reads back the same, here and in PyYAML."""
import yaml

from llm_codesign.explore.yaml_subset import dump, load


def test_yaml_subset_reads_what_it_writes():
    doc = {"a": 1, "b": "x: y", "c": {"d": [1, "two", {"e": None, "f": True}], "g": {}}, "h": ["--flag", "{\"k\": 1}"],
           "nvidia.com/gpu": "8", "i": 0.92}
    text = dump(doc)
    assert load(text) == doc == yaml.safe_load(text)
