"""DiaVLo's DML repetitions: the paper's 100 splits by default, threads that do not change the figures, and
the CLI's --quick."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.protocols.diavlo.cli import _add_audit_arguments
from harness.protocols.diavlo.concept_effects import (
    PAPER_REPS,
    QUICK_REPS,
    Z95,
    DMLSettings,
    _plr,
    _splits,
    dml_estimate,
)


def _data(n: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(n, 2))
    t = (rng.uniform(size=n) < 0.5).astype(float)
    return 0.4 * t + x[:, 0] + 0.2 * rng.normal(size=n), t, x


def test_default_is_the_papers_hundred_splits() -> None:
    assert PAPER_REPS == 100 and DMLSettings().n_rep == 100 and QUICK_REPS == 5


def test_threads_give_the_single_model_figures() -> None:
    y, t, x = _data()
    settings = DMLSettings(n_rep=7, n_estimators=10, n_jobs=1)
    serial, threaded = (
        dml_estimate(y, t, x, settings),
        dml_estimate(y, t, x, DMLSettings(n_rep=7, n_estimators=10, n_jobs=3)),
    )
    assert threaded == serial and len(serial.per_split) == 7
    # one DoubleMLPLR fitting every split itself gives the same theta, SE and splits' thetas
    whole = _plr(y, t, x, settings, _splits(len(y), settings, np.random.default_rng(settings.seed)))
    whole.fit()
    assert serial.effect == pytest.approx(float(whole.coef[0]), abs=1e-12)
    assert serial.se == pytest.approx(float(whole.se[0]), abs=1e-12)
    assert serial.per_split == pytest.approx(tuple(np.asarray(whole.all_coef).ravel()), abs=1e-12)
    # doubleml's median aggregation: theta = median of the splits' thetas; CI = theta +- 1.96 SE
    assert serial.effect == float(np.median(serial.per_split))
    assert serial.ci == pytest.approx((serial.effect - Z95 * serial.se, serial.effect + Z95 * serial.se))


def test_bad_repetition_settings_are_one_line_errors() -> None:
    y, t, x = _data(12)
    with pytest.raises(HarnessError, match="n_rep >= 1"):
        dml_estimate(y, t, x, DMLSettings(n_rep=0))
    with pytest.raises(HarnessError, match="n_jobs >= 0"):
        dml_estimate(y, t, x, DMLSettings(n_rep=2, n_jobs=-1))
    with pytest.raises(HarnessError, match="finite"):
        dml_estimate(np.where(np.arange(12) == 3, np.nan, y), t, x, DMLSettings(n_rep=2))


def test_cli_quick_and_n_rep() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    _add_audit_arguments(parser)
    assert parser.parse_args(["run"]).n_rep is None and not parser.parse_args(["run"]).quick
    assert parser.parse_args(["run", "--quick"]).quick
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--quick", "--n-rep", "3"])


def test_a_dml_effect_keeps_its_interval_typed_as_dml() -> None:
    """The effect's interval is DML's own (effect +- z SE), written as ``ci95`` and as an ``Interval`` of
    method ``dml`` over the effect's counterfactual rows."""
    from harness.protocols.diavlo.concept_effects import ConceptEffect, Estimate

    est = Estimate(0.4, 0.1, (0.4 - Z95 * 0.1, 0.4 + Z95 * 0.1), 0.001, (0.38, 0.42))
    effect = ConceptEffect("red", 40, 12, est, None, None, False, ()).as_dict()
    interval = effect["estimate"]["interval"]
    assert (interval["low"], interval["high"]) == pytest.approx(tuple(effect["estimate"]["ci95"]))
    assert (interval["method"], interval["unit"], interval["n"]) == ("dml", "counterfactual", 40)
