"""The api review's findings (branch apif): a profile rewritten in place is read again, each keyword of compare,
calibrate and export_point refused in one line where it is of the wrong kind, a frontier exports the profile it was
priced with, an unwritten Profile's private file named by its text and called "this Profile", one concurrency bound,
and pareto's disagg/progress and compare's empty weight_dtype refused."""
import json
import threading

import pytest

import llm_codesign as lc
from llm_codesign.measure.calibrate import Profile

M = "llama-3.1-8b"
# a profile of one engine value: each step of TensorRT-LLM (H100's engine) 2 ms dearer than the bundled fit's
SLOW = "[default.step_overhead_s]\ntrtllm = 0.002\n"
W = lc.Workload(isl=1024, osl=256, concurrency=32)


def _tpot(calibration):
    return lc.estimate(M, lc.deployment(M, gpu="h100", num_gpus=1), W, calibration=calibration).tpot_s


def test_a_profile_written_twice_to_one_path_is_priced_as_the_second(tmp_path):
    p = str(tmp_path / "own.toml")
    Profile(text="", report=()).write(p)  # an empty profile: the bundled fit
    assert _tpot(p) == _tpot(None)
    Profile(text=SLOW, report=()).write(p)
    assert _tpot(p) == _tpot(Profile(text=SLOW, report=())) > _tpot(None)
    # the band's table too (measure.intervals._profile_table), and a file rewritten by other means (its size moved)
    (tmp_path / "own.toml").write_text("")
    assert _tpot(p) == _tpot(None)


def test_the_second_profile_moves_tpot_by_its_step_overhead():
    # hand-derived: at 32 in flight, no speculation, one token a step: TPOT moves with the step's fixed cost, from the
    # bundled fit's (data/calibration/fitted.toml [default.step_overhead_s] trtllm, read here so a re-fit does not
    # re-pin it; 39.5507 us at this writing) to the profile's 2 ms: 2,000 - 39.5507 = 1,960.4493 us
    import tomllib
    from importlib.resources import files
    fitted = tomllib.loads(files("llm_codesign.data.calibration").joinpath("fitted.toml").read_text())
    step = fitted["default"]["step_overhead_s"]["trtllm"]
    assert 1e-6 < step < 2e-3  # inside its range, so the difference below is the profile's move
    assert _tpot(Profile(text=SLOW, report=())) - _tpot(None) == pytest.approx(2e-3 - step, rel=1e-6)


def test_an_unwritten_profiles_file_is_named_by_its_text_and_called_this_profile():
    from llm_codesign.measure.calibrate import _temporary

    texts = [f"# {i}\n" + SLOW for i in range(8)]
    got: dict[int, str] = {}

    def run(i):
        got[i] = _temporary(texts[i % 4])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({got[i] for i in range(4)}) == 4 and all(got[i] == got[i + 4] for i in range(4))  # same text, same file
    for i in range(4):
        assert open(got[i]).read() == texts[i]
    f = lc.pareto(M, "h100", num_gpus=1, workload=lc.Workload(isl=512, osl=128), calibration=Profile(text=SLOW, report=()))
    said = json.dumps(f.to_dict()["frontier"][0]["intervals"])
    assert "this Profile" in said and "profile-" not in said and "lc-calibrate" not in said


@pytest.mark.parametrize("call,line", [
    (lambda: lc.calibrate(kernels=5), "kernels: 5 is not valid; a kernel CSV's path or a bundled table's name, or a list of them"),
    (lambda: lc.calibrate(kernels=[5]), "kernels: [5] is not valid; a kernel CSV's path"),
    (lambda: lc.calibrate(kernels="hopper/comm", hold_out=5), "hold_out: 5 is not valid; a model's name, or a list of them"),
    (lambda: lc.calibrate(kernels="hopper/comm", calibration=5),
     "calibration: 5 is not valid; None (the bundled profile), a Profile (lc.calibrate's) or a calibration profile's path"),
    (lambda: lc.calibrate(kernels="hopper/comm", calibration="/nope.toml"), "calibration: '/nope.toml' is not valid; a path to"),
    (lambda: lc.calibrate(kernels="hopper/comm", force="yes"), "force: 'yes' is not valid; True or False"),
    (lambda: lc.compare(M, "h100", num_gpus=1, calibration=5), "calibration: 5 is not valid; None (the bundled profile)"),
    (lambda: lc.compare(M, "h100", num_gpus=1, weight_dtype=[]), "weight_dtype: [] is not valid; a weight format, or a non-empty list"),
    (lambda: lc.pareto(M, "h100", num_gpus=1, disagg="no"), "disagg: 'no' is not valid; True or False"),
    (lambda: lc.pareto(M, "h100", num_gpus=2, disagg=True, progress=print),
     "progress: 'print' is not valid; left out with disagg=True (the disaggregated search reports no progress)"),
    (lambda: lc.disagg(M, "h100", prefill="tp=1", decode="tp=1", concurrency=2_000_000),
     "concurrency: 2000000 is not valid; a positive integer up to 1,048,576"),
])
def test_a_keyword_of_the_wrong_kind_is_one_line_naming_it(call, line):
    with pytest.raises(lc.InputError) as e:
        call()
    assert str(e.value).startswith(line) and "\n" not in str(e.value), str(e.value)


def test_the_cli_page_and_api_share_one_concurrency_bound():
    from llm_codesign.cli import common
    from llm_codesign.spec import plan
    from llm_codesign.web import app

    assert common.MAX_CONCURRENCY is plan.MAX_CONCURRENCY == 1 << 20
    assert app.MAX_CONCURRENCY is plan.MAX_CONCURRENCY


@pytest.fixture(scope="module")
def frontiers(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("prof") / "slow.toml")
    Profile(text=SLOW, report=()).write(p)
    w = lc.Workload(isl=512, osl=128)
    return lc.pareto(M, "h100", num_gpus=1, workload=w), lc.pareto(M, "h100", num_gpus=1, workload=w, calibration=p), p


def _header_calibration(files):
    (text,) = files.values()
    return json.loads(text.splitlines()[0].split(" ", 2)[2]).get("calibration") if text.startswith("#") else text


def test_export_point_records_the_profile_the_frontier_was_priced_with(frontiers):
    bundled, own, p = frontiers
    text = next(iter(lc.export_point(own, 0).values()))
    assert f'"calibration": "{p}"' in text  # not passed again: the frontier's own
    assert text == next(iter(lc.export_point(own, 0, calibration=p).values()))
    assert '"calibration"' not in next(iter(lc.export_point(bundled, 0).values()))


@pytest.mark.parametrize("kw,line", [
    ({"calibration": 5}, "calibration: 5 is not valid; None (the bundled profile)"),
    ({"calibration": "/nope.toml"}, "calibration: '/nope.toml' is not valid; a path to a calibration profile .toml"),
    ({"file_name": ".."}, "file_name: '..' is not valid; a file's name without a folder"),
    ({"file_name": "."}, "file_name: '.' is not valid"),
    ({"file_name": "a\x00b"}, "file_name: 'a\\x00b' is not valid"),
    ({"file_name": "a\\b"}, "file_name: 'a\\\\b' is not valid"),
])
def test_export_point_refuses_a_bad_keyword_in_one_line(frontiers, kw, line):
    with pytest.raises(lc.InputError) as e:
        lc.export_point(frontiers[0], 0, **kw)
    assert str(e.value).startswith(line) and "\n" not in str(e.value), str(e.value)


def test_export_point_refuses_another_profile_than_the_frontiers(frontiers):
    from llm_codesign.cost.calibration import calibration_for

    bundled, own, p = frontiers
    with pytest.raises(lc.InputError, match=r"^calibration: '.*slow.toml' is not valid; left out or the profile the frontier was priced "
                                            r"with \(the bundled one\)"):
        lc.export_point(bundled, 0, calibration=p)
    with pytest.raises(lc.InputError, match=r"^calibration: 'Calibration' is not valid; left out or the profile the frontier was priced "
                                            r"with \(.*slow.toml\)"):
        lc.export_point(own, 0, calibration=calibration_for(lc.get_gpu("h100")))
    # the bundled fit as an object is the bundled profile: nothing recorded
    assert lc.export_point(bundled, 0, calibration=calibration_for(lc.get_gpu("h100"))) == lc.export_point(bundled, 0)


def test_a_frontier_priced_with_an_unwritten_profile_exports_once_it_is_written(tmp_path):
    u = Profile(text=SLOW, report=())
    f = lc.pareto(M, "h100", num_gpus=1, workload=lc.Workload(isl=512, osl=128), calibration=u)
    with pytest.raises(lc.InputError, match=r"^calibration: 'an unwritten Profile' is not valid; a path, or a Profile written to one"):
        lc.export_point(f, 0)
    p = str(tmp_path / "slow.toml")
    (text,) = lc.export_point(f, 0, calibration=u.write(p)).values()
    assert f'"calibration": "{p}"' in text
    with pytest.raises(lc.InputError, match=r"^calibration: 'Profile' is not valid; left out or the profile the frontier was priced with"):
        lc.export_point(f, 0, calibration=Profile(text="", report=()).write(str(tmp_path / "other.toml")))


def test_a_server_keeps_the_last_profiles_files_not_every_one(monkeypatch):
    """The final review: every distinct profile text sent to /api/estimate wrote a file and a label kept until exit.
    With 2 kept, a third text removes the least recently used one's file and label; a text used again is kept."""
    import os

    from llm_codesign.cost.calibration import LABELS
    from llm_codesign.measure import calibrate

    monkeypatch.setattr(calibrate, "TEMPORARY_KEPT", 2)
    monkeypatch.setattr(calibrate, "_TEMPORARY", {})
    a = calibrate._temporary("# kept a\n" + SLOW)
    b = calibrate._temporary("# kept b\n" + SLOW)
    assert calibrate._temporary("# kept a\n" + SLOW) == a  # a used again: b is now the least recent
    c = calibrate._temporary("# kept c\n" + SLOW)
    assert os.path.exists(a) and os.path.exists(c) and not os.path.exists(b)
    assert LABELS.get(a) == LABELS.get(c) == "this Profile" and b not in LABELS
    assert list(calibrate._TEMPORARY.values()) == [a, c]
