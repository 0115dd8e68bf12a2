"""render/compare_plot.py: `compare --plot`, each row's best deployment at the SLO with its accuracy."""
import pytest
from typer.testing import CliRunner

from llm_codesign.cli import app


def cli(*args: str):
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "2000"})
    return r.exit_code, r.stdout, r.stderr


def test_points_labels_and_legend(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from llm_codesign.render.compare_plot import draw_compare

    def row(model, gpu, w, best):
        return {"model": model, "gpu": gpu, "weight_dtype": w, "best": best and {"tok_s_per_user": best[0], "output_tok_s_per_gpu": best[1]}}

    rows = [row("m1", "h200", "bf16", (10.0, 1000.0)), row("m1", "h200", "fp8", (12.0, 2000.0)), row("m2", "b200", "fp8", None),
            row("m2", "h200", "fp8", (20.0, 500.0))]
    seen = []
    real = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: (seen.append(fig), real(fig, *a, **k))[1])
    draw_compare(rows, ["84.4", "84.29", "n/a", "ref"], tmp_path / "c.svg", title="t")
    ax = seen[0].axes[0]
    # the row with no deployment meeting the SLO is left out; each point labelled with its precision and accuracy
    assert [t.get_text() for t in ax.texts] == ["bf16: 84.4", "fp8: 84.29", "fp8: ref"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["m1", "m2", "h200", "b200"]  # colours by model, markers by GPU
    assert (tmp_path / "c.svg").read_text().startswith("<?xml")


def test_compare_plot_from_the_command_line(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from llm_codesign.render import compare_plot

    drawn = {}
    real = compare_plot.draw_compare
    monkeypatch.setattr(compare_plot, "draw_compare", lambda rows, cells, path, **kw: (drawn.update(cells=cells), real(rows, cells, path, **kw)))
    out = tmp_path / "c.png"
    code, stdout, err = cli("compare", "llama-3.1-70b", "--gpu", "h200", "--plot", str(out))
    assert code == 0, err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and stdout.splitlines()[-1] == f"wrote plot: {out}"
    assert drawn["cells"] == ["84.4", "84.29"]  # each point labelled with the model's one benchmark
    code, _, err = cli("compare", "llama-3.1-70b", "--plot", str(tmp_path / "c.jpg"))
    assert code == 2 and err.strip() == f"error: plot: '{tmp_path / 'c.jpg'}' is not valid; a .png or .svg path"
