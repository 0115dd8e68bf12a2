"""errors.py: one error type for bad input, whose message names the field, the value and what is valid."""
import pytest

from llm_codesign.errors import InputError, UnsupportedModelError, read_toml


def test_the_message_names_field_value_and_what_is_valid():
    e = InputError("tp", 3, "a divisor of the 64 attention heads")
    assert str(e) == "tp: 3 is not valid; a divisor of the 64 attention heads"
    assert (e.field, e.value, e.valid) == ("tp", 3, "a divisor of the 64 attention heads")
    assert isinstance(e, ValueError)  # callers that catch ValueError still do
    assert isinstance(UnsupportedModelError("layer", "rwkv7", "a supported mixer"), InputError)


def test_read_toml_refuses_a_missing_file_and_bad_toml_in_one_line(tmp_path):
    good = tmp_path / "p.toml"
    good.write_text('[a]\nb = 1\n')
    assert read_toml(str(good), "profile", "a calibration profile") == {"a": {"b": 1}}
    with pytest.raises(InputError, match=r"^profile: '.*nope.toml' is not valid; a path to a calibration profile .toml$"):
        read_toml(str(tmp_path / "nope.toml"), "profile", "a calibration profile")
    bad = tmp_path / "bad.toml"
    bad.write_text("[a\n")
    with pytest.raises(InputError, match=r"profile: .* valid TOML \(") as info:
        read_toml(str(bad), "profile", "a calibration profile")
    assert "\n" not in str(info.value)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="valid TOML"):
        read_toml(str(binary), "profile", "a calibration profile")


def test_parse_nested_reads_the_limit_and_refuses_one_level_more():
    import json

    from llm_codesign.errors import MAX_NESTING, parse_nested

    at, over = "[" * MAX_NESTING + "]" * MAX_NESTING, "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)
    doc = parse_nested(json.loads, at, "f", "x.json")
    for _ in range(MAX_NESTING - 1):
        (doc,) = doc
    assert doc == []
    assert parse_nested(json.loads, '{"a": {"b": [1, {"c": 2}]}}', "f", "x.json") == {"a": {"b": [1, {"c": 2}]}}
    msg = f"f: 'x.json' is not valid; a file whose arrays and tables nest at most {MAX_NESTING} levels deep"
    for text in (over, "[" * 100_000 + "]" * 100_000):  # the walk; the parser's RecursionError
        with pytest.raises(InputError) as e:
            parse_nested(json.loads, text, "f", "x.json")
        assert str(e.value) == msg


def test_read_toml_reads_a_byte_order_mark_and_bounds_nesting(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text("\ufeff[a]\nb = 1\n", encoding="utf-8")
    assert read_toml(str(p), "profile", "a calibration profile") == {"a": {"b": 1}}
    p.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(InputError, match=r"^profile: '.*p.toml' is not valid; a file whose arrays and tables nest at most 64 levels deep$"):
        read_toml(str(p), "profile", "a calibration profile")


def test_a_long_value_is_named_by_its_type_not_dumped():
    """newc12 #7: lc.evaluate(m, [d, d]) quoted the list's repr, 4,432 characters, as its "one line". A repr past
    MAX_QUOTED (80) is said by its type (a container with its length and its items' type), a text past MAX_QUOTED_TEXT
    (256: a path whole) by its start and length; a short one stays quoted as typed."""
    import llm_codesign as lc
    d = lc.deployment("llama-3.1-8b", gpu="h100")
    with pytest.raises(InputError) as e:
        lc.evaluate("llama-3.1-8b", [d, d], lc.Workload())
    assert str(e.value) == "deployment: a list of 2 Deployment is not valid; a Deployment: lc.deployment(model, gpu=..., num_gpus=...)"
    assert str(InputError("f", d, "x")) == "f: a Deployment is not valid; x"
    assert str(InputError("f", {i: i for i in range(40)}, "x")) == "f: a dict of 40 int is not valid; x"
    assert str(InputError("f", [1, "a"] * 20, "x")) == "f: a list of 40 items is not valid; x"
    assert str(InputError("f", "y" * 300, "x")) == f"f: {'y' * 60!r}... (300 characters) is not valid; x"
    assert str(InputError("f", "/p" * 120, "x")) == f"f: {'/p' * 120!r} is not valid; x"  # a path, whole to MAX_QUOTED_TEXT
    assert str(InputError("f", ["h100", "h200"], "x")) == "f: ['h100', 'h200'] is not valid; x"  # short: as typed
    # a name past the file system's limit is an unknown model, not an OSError (ENAMETOOLONG) from the path check
    with pytest.raises(InputError, match=r"^model: 'x+'\.\.\. \(300 characters\) is not valid; a bundled name"):
        lc.get_model("x" * 300)
