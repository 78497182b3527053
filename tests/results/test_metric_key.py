"""MetricKey: a figure's metric and filter, spelled ``"metric,filter"`` only in the files."""

from __future__ import annotations

import pytest

from harness.results.metric_key import MetricKey, figures, label_of


def test_the_key_is_lmms_eval_s_spelling_and_its_stderr_the_same_filter() -> None:
    key = MetricKey("exact_match")
    assert (key.encoded, str(key), key.stderr.encoded) == (
        "exact_match,none",
        "exact_match,none",
        "exact_match_stderr,none",
    )
    assert MetricKey("acc", "take_first").stderr == MetricKey("acc_stderr", "take_first")
    assert key.stderr.is_stderr and not key.is_stderr


@pytest.mark.parametrize(
    "text, expected",
    [
        ("exact_match,none", MetricKey("exact_match", "none")),
        ("acc,flexible,extract", MetricKey("acc", "flexible,extract")),  # the filter keeps its own commas
        ("acc_stderr,none", MetricKey("acc_stderr", "none")),
        ("alias", None),
    ],
)
def test_parse_splits_at_the_first_comma_and_names_no_figure_without_one(text: str, expected: MetricKey | None) -> None:
    assert MetricKey.parse(text) == expected
    if expected is not None:
        assert expected.encoded == text  # parse and encode are inverse


def test_figures_leave_out_the_alias_and_the_standard_errors() -> None:
    values = {"alias": "t", "acc,none": 0.5, "acc_stderr,none": 0.1, "f1,strict": None, "f1_stderr,strict": "N/A"}
    assert list(figures(values)) == [(MetricKey("acc"), 0.5), (MetricKey("f1", "strict"), None)]


def test_figures_leave_out_lmms_eval_s_clt_and_clustered_stderrs_and_the_baseline_fields() -> None:
    acc = MetricKey("acc")
    values = {
        "acc,none": 0.5,
        acc.stderr_of("_stderr_clt").encoded: 0.1,
        acc.stderr_of("_stderr_clustered").encoded: "N/A",
        acc.stability("consistency_rate").encoded: 0.75,
        "paired_baseline": "run",
        "paired_pvalue": 0.2,
    }
    assert acc.stderr_of("_stderr_clt").encoded == "acc_stderr_clt,none"
    assert acc.stability("expected_accuracy").encoded == "acc_expected_accuracy,none"
    assert list(figures(values)) == [(acc, 0.5), (MetricKey("acc_consistency_rate"), 0.75)]


def test_labels_show_a_filter_other_than_none() -> None:
    assert [label_of(k) for k in ("exact_match,none", "acc,take_first", "acc,", "alias")] == [
        "exact_match",
        "acc (take_first)",
        "acc",
        "alias",
    ]
