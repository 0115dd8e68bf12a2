"""explore/yaml_io.py: PyYAML's safe_load and safe_dump, as the engines read their files, with the
nesting bound, aliases and keys that are not names refused as one line."""
import pytest

from llm_codesign.errors import MAX_NESTING, InputError
from llm_codesign.explore.yaml_io import dump, load


def test_reads_what_it_writes_quoting_strings_that_would_read_as_another_type():
    doc = {"a": 1, "b": "x: y", "c": {"d": [1, "two", {"e": None, "f": True}], "g": {}}, "h": ["--flag", "{\"k\": 1}"],
           "nvidia.com/gpu": "8", "i": 0.92, "j": "yes", "k": "null", "l": ""}
    text = dump(doc)
    assert load(text) == doc
    assert text.splitlines()[:3] == ["a: 1", "b: 'x: y'", "c:"]
    assert "nvidia.com/gpu: '8'" in text and "j: 'yes'" in text and "k: 'null'" in text and "l: ''" in text


def test_yaml_1_1_booleans_as_the_engines_read_them():
    # vLLM, SGLang and TensorRT-LLM call yaml.safe_load: `yes`/`no`/`on`/`off` are booleans there
    assert load("a: yes\nb: no\nc: on\nd: off\ne: True\nf: 'yes'\n") == {"a": True, "b": False, "c": True, "d": False, "e": True,
                                                                        "f": "yes"}
    assert load("") == {} and load("# only a comment\n") == {}


@pytest.mark.parametrize("text,problem", [
    ("a: &x [1, 2]\nb: *x\n", "a value an alias repeats (&name, *name), which these files have no use for at line 1, column 4"),
    ("a: &x 1\n<<: {b: *x}\n", "a value an alias repeats (&name, *name), which these files have no use for at line 1, column 4"),
    ("1: a\n", "the key 1, not a name at line 1, column 1"),
    ("a: [1, 2\n", " at line 2, column 1"),  # the parser's own words before it (libyaml's or PyYAML's)
    ("a: 1\n b: 2\n", " at line 2, column 3"),
])
def test_bad_yaml_is_one_line_naming_the_file_and_the_place(text, problem):
    with pytest.raises(InputError) as e:
        load(text, "c.yaml")
    assert str(e.value).startswith("export: 'c.yaml' is not valid; valid YAML (") and str(e.value).endswith(f"{problem})")
    assert "\n" not in str(e.value)


def test_nesting_by_indentation_or_in_flow_values_is_bounded():
    def nested(n):  # n mappings, one inside the next, by indentation
        return "".join(" " * (2 * i) + "k:\n" for i in range(n - 1)) + " " * (2 * (n - 1)) + "k: 1\n"

    doc = load(nested(MAX_NESTING))
    for _ in range(MAX_NESTING - 1):
        doc = doc["k"]
    assert doc == {"k": 1}
    for text in (nested(MAX_NESTING + 1), nested(2000), "k: " + "[" * 100_000 + "]" * 100_000 + "\n"):
        with pytest.raises(InputError, match=f"^export: 'e.yaml' is not valid; a file whose arrays and tables nest at most {MAX_NESTING} "):
            load(text, "e.yaml")
