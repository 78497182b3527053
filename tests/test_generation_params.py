import pytest

from harness.errors import ModelSpecError, UnsupportedRequestError
from harness.models.base import GenerationParams, create_backend, parse_model_args, truncate_at_stop


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
        ({"top_p": 0}, "out-of-range"),
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
