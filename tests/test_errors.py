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
