import pytest

from harness.errors import ModelSpecError, UnsupportedRequestError
from harness.models.base import GenerationParams, create_backend, finished_text, parse_model_args, truncate_at_stop


def test_defaults_are_greedy() -> None:
    p = GenerationParams.from_kwargs({})
    assert (p.do_sample, p.max_new_tokens, p.num_beams, p.until) == (False, 256, 1, ())


def test_lmms_style_kwargs_are_honoured() -> None:
    p = GenerationParams.from_kwargs(
        {"max_new_tokens": 32, "temperature": 0.7, "top_p": 0.9, "top_k": 5, "until": "\n\n"}
    )
    assert p.do_sample and p.temperature == 0.7 and p.top_p == 0.9 and p.top_k == 5
    assert p.until == ("\n\n",)
    greedy = GenerationParams.from_kwargs({"temperature": 0, "do_sample": False})
    assert not greedy.do_sample
    task = {"temperature": 0, "do_sample": False, "max_new_tokens": 8}
    sampled = GenerationParams.from_kwargs(GenerationParams.merge(task, {"temperature": 0.7}))
    assert sampled.do_sample and sampled.temperature == 0.7 and sampled.max_new_tokens == 8
    assert not GenerationParams.from_kwargs(GenerationParams.merge(task, {"max_new_tokens": 4})).do_sample


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"image_aspect_ratio": "pad"}, "unsupported generation setting.*image_aspect_ratio"),
        ({"do_sample": True, "temperature": 0}, "do_sample is true but temperature is 0"),
        ({"do_sample": False, "temperature": 0.7}, "do_sample is false but temperature is 0.7"),
        ({"top_p": 0}, "top_p=0"),
        ({"num_beams": 2, "temperature": 0.5}, "beam search with sampling"),
    ],
)
def test_settings_that_cannot_be_honoured_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(UnsupportedRequestError, match=message):
        GenerationParams.from_kwargs(kwargs)


def test_truncate_at_first_stop_string() -> None:
    assert truncate_at_stop("red.\nblue\n\nx", ("\n\n", "\n")) == "red."
    assert truncate_at_stop("no stop", ("###",)) == "no stop"
    assert truncate_at_stop("abc", ("",)) == "abc"


def test_a_trailing_cut_off_character_is_dropped_everywhere() -> None:
    """ "caf" + the first byte of "\u00e9" (0xC3) decodes to "caf\ufffd"; vLLM never emits that byte, so
    no backend keeps its U+FFFD. Inside the text it stays; a stop string cuts first."""
    cut = b"caf\xc3".decode("utf-8", errors="replace")
    assert cut == "caf\ufffd" and finished_text(cut, ()) == "caf"
    assert finished_text("a\ufffd\ufffd", ()) == "a"  # two stray bytes: two replacement characters
    assert finished_text("a\ufffdb", ()) == "a\ufffdb"
    assert finished_text("ab\ufffd\nrest", ("\n",)) == "ab"
    assert finished_text("\ufffd", ()) == ""


def test_model_spec_and_args_errors() -> None:
    with pytest.raises(ModelSpecError, match="must look like BACKEND:NAME"):
        create_backend("Qwen/Qwen2-VL-7B-Instruct")
    with pytest.raises(ModelSpecError, match="unknown backend 'nope'"):
        create_backend("nope:x")
    with pytest.raises(ModelSpecError, match="unknown tiny architecture 'gpt9'"):
        create_backend("tiny:gpt9")
    with pytest.raises(ModelSpecError, match="expected key=value"):
        parse_model_args("dtype")
    assert parse_model_args("dtype=float32, device=cpu") == {"dtype": "float32", "device": "cpu"}


@pytest.mark.parametrize(
    ("kwargs", "problems"),
    [
        ({"temperature": "hot"}, ["temperature='hot': expected a finite number >= 0"]),
        ({"until": 5}, ["until=5: expected a string or a list of strings"]),
        ({"until": ["\n", 3]}, ["until=['\\n', 3]: expected a string or a list of strings"]),
        ({"num_beams": "two"}, ["num_beams='two': expected a whole number >= 1"]),
        ({"temperature": float("inf")}, ["temperature=inf: expected a finite number >= 0"]),
        ({"temperature": float("nan")}, ["temperature=nan: expected a finite number >= 0"]),
        ({"temperature": -1}, ["temperature=-1: expected a finite number >= 0"]),
        ({"max_new_tokens": 2.7}, ["max_new_tokens=2.7: expected a whole number >= 1"]),
        ({"max_new_tokens": 0}, ["max_new_tokens=0: expected a whole number >= 1"]),
        ({"max_new_tokens": True}, ["max_new_tokens=True: expected a whole number >= 1"]),
        ({"top_p": 0}, ["top_p=0: expected a finite number > 0 and <= 1"]),
        ({"top_p": 1.5}, ["top_p=1.5: expected a finite number > 0 and <= 1"]),
        ({"top_k": -3}, ["top_k=-3: expected a whole number >= 1 or null"]),
        ({"do_sample": "yes"}, ["do_sample='yes': expected true or false"]),
        (
            {"temperature": "hot", "until": 5, "num_beams": "two", "colour": 1},
            ["unsupported generation setting(s) colour", "temperature='hot'", "until=5", "num_beams='two'"],
        ),
    ],
)
def test_every_setting_is_type_and_range_checked_and_all_problems_are_listed(kwargs: dict, problems: list[str]) -> None:
    with pytest.raises(UnsupportedRequestError) as caught:
        GenerationParams.from_kwargs(kwargs, where="task t generation_kwargs")
    message = str(caught.value)
    assert message.startswith("task t generation_kwargs: ")
    lines = message.splitlines()
    assert len(lines) == (1 if len(problems) == 1 else 1 + len(problems))  # one problem: one line
    for problem in problems:
        assert any(problem in line for line in lines), (problem, message)


def test_null_means_the_default_and_whole_floats_are_whole_numbers() -> None:
    p = GenerationParams.from_kwargs({"temperature": None, "top_p": None, "top_k": None, "max_new_tokens": 8})
    assert (p.temperature, p.top_p, p.top_k, p.max_new_tokens) == (0.0, 1.0, None, 8)


def test_cli_gen_kwargs_are_validated_before_any_model_loads(tmp_path, capsys) -> None:
    from harness.cli import main

    code = main(
        [
            "eval",
            "--model",
            "tiny:qwen2_vl",
            "--tasks",
            "shapes_color",
            "--data-dir",
            str(tmp_path),
            "--gen-kwargs",
            "temperature=Infinity,until=5,num_beams=two,max_new_tokens=2.7",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    for key in ("temperature=inf", "until=5", "num_beams='two'", "max_new_tokens=2.7"):
        assert key in err
