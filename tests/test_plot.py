"""render/plot.py: the figure drawn by a forked child is the figure drawn in process; a child that
fails is replaced by drawing here; a drawing cancelled by a failed write leaves no file behind."""
import os
import sys
import time

import pytest

from llm_codesign.cost.calibration import calibration_for
from llm_codesign.explore.search import SearchSpace, search
from llm_codesign.outputs import write_all
from llm_codesign.render import plot
from llm_codesign.render.report import write_plot
from llm_codesign.spec.hardware import get_gpu
from llm_codesign.spec.registry import get_model

forks = pytest.mark.skipif(not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
                           reason="PlotProcess forks only on Linux with a second core")


@pytest.fixture(scope="module")
def result():
    g = get_gpu("h100")
    return search(get_model("llama-3.1-8b"), g, calibration_for(g), SearchSpace(4), isl=512, osl=256)


def _drawn_by_the_child_only(monkeypatch):
    """After the fork: this process may not draw (the child has its own copy of `draw`)."""
    def refuse(*args, **kwargs):
        raise AssertionError("drawn in the parent, not by the child")

    monkeypatch.setattr(plot, "draw", refuse)


@forks
def test_forked_figure_is_the_in_process_figure(result, tmp_path, monkeypatch):
    here, there = tmp_path / "here.png", tmp_path / "there.png"
    write_plot([result], here)
    with plot.PlotProcess() as proc:
        assert proc._child is not None  # it did fork
        _drawn_by_the_child_only(monkeypatch)
        drawing = write_plot([result], there, process=proc)
        drawing.wait()
    assert there.read_bytes() == here.read_bytes()


@forks
def test_two_processes_do_not_hold_each_other_up(result, tmp_path, monkeypatch):
    """The second fork inherits the first's job pipe; the first child still gets its whole job (sent
    length first) and answers, with no end of file from the pipe."""
    first, second = plot.PlotProcess().start(), plot.PlotProcess().start()
    try:
        _drawn_by_the_child_only(monkeypatch)
        t = time.monotonic()
        write_plot([result], tmp_path / "a.png", process=first).wait()
        assert time.monotonic() - t < 60 and (tmp_path / "a.png").stat().st_size > 10_000
    finally:
        second.close()


@forks
def test_a_child_reaped_by_someone_else_is_no_error(result, tmp_path):
    """A process that ignores SIGCHLD has its children reaped by the kernel: ending one is no error."""
    import signal

    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        with plot.PlotProcess() as proc:
            write_plot([result], tmp_path / "f.png", process=proc).wait()
        assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        signal.signal(signal.SIGCHLD, old)


@forks
def test_a_failed_child_is_drawn_here(result, tmp_path, monkeypatch):
    def broken(job_fd, answer_fd):
        raise RuntimeError("the child fails")

    monkeypatch.setattr(plot, "_serve", broken)  # the fork copies the patched module
    here, there = tmp_path / "here.png", tmp_path / "there.png"
    plot.draw(plot.plot_view([result.to_dict(plot=True)]), here)
    proc = plot.PlotProcess().start()
    pid = proc._child.pid
    proc.submit([result.to_dict(plot=True)], there).wait()
    assert there.read_bytes() == here.read_bytes()
    with pytest.raises(ChildProcessError):  # reaped: no zombie left
        os.waitpid(pid, os.WNOHANG)


@forks
def test_a_failed_write_cancels_the_drawing_and_leaves_nothing(result, tmp_path):
    def fails(_tmp):
        raise OSError(28, "No space left on device")

    with plot.PlotProcess() as proc:
        pid = proc._child.pid
        with pytest.raises(OSError, match="No space left") as e:
            write_all([(lambda p: write_plot([result], p, process=proc), tmp_path / "f.png"), (fails, tmp_path / "f.csv")])
    assert e.value.filename == str(tmp_path / "f.csv")  # the file whose writer failed
    with pytest.raises(ChildProcessError):  # the child is gone before its temporary file was removed
        os.waitpid(pid, os.WNOHANG)
    assert list(tmp_path.iterdir()) == []


@forks
def test_a_child_never_sent_a_figure_is_ended():
    proc = plot.PlotProcess().start()
    pid = proc._child.pid
    proc.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@forks
@pytest.mark.parametrize("argv, forked", [
    (["pareto", "llama-3.1-8b", "--out", "x"], True), (["pareto", "--plot=f.png"], True),
    (["pareto", "llama-3.1-8b", "--json"], False), (["estimate", "--out", "x"], False), ([], False)])
def test_the_entry_point_forks_early_only_where_pareto_draws(argv, forked):
    """cli.main forks the figure's process before the commands' imports where the arguments ask pareto
    for a figure; the command takes it (PlotProcess.started), and one no command takes is released
    and leaves by itself once its import is done."""
    plot.start_early(argv)
    try:
        assert (plot._early is not None) == forked
        if forked:
            early = plot._early
            assert plot.PlotProcess.started() is early and plot._early is None  # taken once
            early.close()
    finally:
        plot.drop_early()
    plot.start_early(["pareto", "--out", "x"])
    pid = plot._early._child.pid
    plot.drop_early()  # released, not waited for
    assert plot._early is None
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):  # it finds no job and exits on its own
        assert time.monotonic() < deadline
        time.sleep(0.05)


@forks
def test_an_early_process_is_left_by_a_refused_command(tmp_path):
    """A pareto refused after the early fork (a plot path it cannot write): one line, exit 2, nothing
    written. The child holds the same stderr pipe, so the output read here ends only when it has left:
    nothing of its import follows the command's line."""
    import subprocess

    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "llm_codesign.cli", "pareto", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2",
                        "--out", str(out), "--plot", str(tmp_path / "f.jpg")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "plot" in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_childs_lighter_import_draws_the_same_figure(result, tmp_path):
    # the child's matplotlib import skips the set() docstrings (plot._import_matplotlib): in a fresh
    # interpreter each way, the same PNG, byte for byte
    import pickle
    import subprocess

    job = tmp_path / "view.pickle"
    job.write_bytes(pickle.dumps(plot.plot_view([result.to_dict(plot=True)])))
    script = ("import pickle, sys\nfrom llm_codesign.render import plot\n{}\n"
              "plot.draw(pickle.load(open(sys.argv[1], 'rb')), sys.argv[2])\n")
    for name, first in (("light.png", "plot._import_matplotlib()"), ("plain.png", "")):
        r = subprocess.run([sys.executable, "-c", script.format(first), str(job), str(tmp_path / name)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "light.png").read_bytes() == (tmp_path / "plain.png").read_bytes()
    check = subprocess.run([sys.executable, "-c", "from matplotlib import artist\n"
                            "known = hasattr(artist.Artist, '_update_set_signature_and_docstring')\n"
                            "from llm_codesign.render import plot\nplot._import_matplotlib()\nimport matplotlib.lines as l\n"
                            "assert not known or 'Supported properties' not in (l.Line2D.set.__doc__ or '')"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr  # the import was the lighter one (where this matplotlib has the hook)


def test_the_childs_import_writes_nothing_to_the_terminal(capfd):
    # what the import prints (matplotlib's first-run font-cache note) goes nowhere; both streams come back
    def noisy():  # as the child's streams write: to file descriptors 1 and 2, buffered or not
        print("to stdout", file=sys.__stdout__)
        print("to stderr", file=sys.__stderr__)
        os.write(2, b"raw\n")

    plot._quietly(noisy)
    os.write(1, b"after\n")
    out, err = capfd.readouterr()
    assert out == "after\n" and err == ""


def test_without_a_second_core_the_figure_is_drawn_here(result, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    proc = plot.PlotProcess().start()
    assert proc._child is None
    drawing = write_plot([result], tmp_path / "f.png", process=proc)
    drawing.wait()
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_view_is_plain_data(result):
    """What the child is sent: the figure's inputs only, in types pickle takes without llm_codesign."""
    import pickle

    view = plot.plot_view([result.to_dict(plot=True)])
    assert set(view[0]) == {"model", "gpu", "num_gpus", "isl", "osl", "mode", "cloud", "roofline_bound", "backend", "frontier"}  # backend: the title names the engine
    assert set(view[0]["frontier"][0]["deployment"]) == set(plot._DEPLOYMENT_KEYS)
    assert b"llm_codesign" not in pickle.dumps(view)
