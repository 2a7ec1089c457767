"""`graphclust demo`: the main job on built-in data."""

import sys

from graphclust.cli import main


def test_demo_default_chooses_c_by_stability(tmp_path, capsys):
    out = tmp_path / "demo.png"
    rc = main(["demo", "--output", str(out)])  # three moons, 600 points
    text = capsys.readouterr().out
    assert rc == 0
    assert "criterion stability" in text and "c = 3" in text and "tau =" in text
    assert "representatives" in text and "worst global outliers" not in text
    assert "error 0.0000" in text
    assert out.exists() and out.stat().st_size > 1000


def test_demo_max_clusters_asks_for_omega_and_stability_refuses_it(capsys):
    assert main(["demo", "--criterion", "stability", "--max-clusters", "4",
                 "--output", "none"]) == 1
    assert "--max-clusters bounds the Omega search" in capsys.readouterr().err
    assert main(["demo", "--dataset", "two_moons", "--max-clusters", "4",
                 "--output", "none"]) == 0
    assert "criterion omega" in capsys.readouterr().out


def test_demo_prints_choices_and_writes_picture(tmp_path, capsys):
    out = tmp_path / "demo.png"
    rc = main(["demo", "--dataset", "two_moons", "--n-samples", "300", "--criterion", "omega",
               "--output", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "sigma =" in text and "alpha =" in text and "c = 2" in text
    assert "representatives" in text and "worst global outliers" in text
    assert "error 0.0000" in text
    assert out.exists() and out.stat().st_size > 1000


def test_demo_without_matplotlib_says_which_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    rc = main(["demo", "--dataset", "two_moons", "--n-samples", "200", "--output",
               str(tmp_path / "x.png")])
    captured = capsys.readouterr()
    assert rc == 0
    assert "pip install graphclust[plot]" in captured.err
    assert not (tmp_path / "x.png").exists()


def test_demo_bad_argument_is_a_clear_error(capsys):
    rc = main(["demo", "--dataset", "two_moons", "--n-samples", "1"])
    assert rc == 1
    assert "n_samples must satisfy" in capsys.readouterr().err
