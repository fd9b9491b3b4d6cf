"""The exception hierarchy: one root, and each error is also the matching builtin."""

from __future__ import annotations

import pytest

from contextwright.core import errors


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.InputError, ValueError),
        (errors.ConfigError, ValueError),
        (errors.BudgetError, ValueError),
        (errors.TokenizerError, RuntimeError),
        (errors.StoreError, RuntimeError),
        (errors.CompressionError, RuntimeError),
        (errors.AssemblyCancelled, RuntimeError),
        (errors.DeadlineExceeded, TimeoutError),
        (errors.DeadlineExceeded, errors.AssemblyCancelled),
        (errors.MissingDependencyError, ImportError),
    ],
)
def test_every_error_is_a_contextwright_error_and_its_builtin(cls: type, builtin: type) -> None:
    assert issubclass(cls, errors.ContextwrightError) and issubclass(cls, builtin)
    with pytest.raises(builtin):
        raise cls("x")


def test_missing_extra_names_the_module_and_the_install_command() -> None:
    exc = errors.missing_extra("psycopg", "store")
    assert isinstance(exc, errors.MissingDependencyError)
    assert (
        str(exc)
        == "'psycopg' is not installed; it comes with the 'store' extra: pip install 'contextwright[store]'"
    )


def test_the_module_docstring_draws_every_error() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        if name[0].isupper():
            assert name in doc, name


def test_loc_is_keyword_only_empty_by_default_and_leaves_the_message_alone() -> None:
    plain = errors.ConfigError("k must be positive")
    assert plain.loc == () and str(plain) == "k must be positive"
    located = errors.ConfigError("k must be positive", loc=("stages", 2, "k"))
    assert located.loc == ("stages", 2, "k") and str(located) == "k must be positive"
    assert errors.LLMError("down", status=503).loc == ()


def test_loc_survives_pickling() -> None:
    import pickle

    exc = pickle.loads(pickle.dumps(errors.ConfigError("bad", loc=("stages", 0, "k"))))
    assert exc.loc == ("stages", 0, "k") and str(exc) == "bad"


def test_located_prefixes_the_loc_and_reraises_the_same_error() -> None:
    original = errors.ConfigError("bad", loc=("k",))
    with pytest.raises(errors.ConfigError) as info, errors.located("stages", 3):
        raise original
    assert info.value is original and info.value.loc == ("stages", 3, "k")
    with pytest.raises(KeyError), errors.located("x"):  # not ours: untouched
        raise KeyError("y")


def _stages(*stages: dict[str, object]) -> dict[str, object]:
    return {"stages": [{"type": "exact_dedup"}, *stages]}


@pytest.mark.parametrize(
    ("config", "loc", "message"),
    [
        (
            _stages({"type": "near_dedup", "threshold": 0.9, "treshold": 1}),
            ("stages", 1, "treshold"),
            "treshold",
        ),
        (_stages({"type": "near_dedup", "num_perm": 10**9}), ("stages", 1, "num_perm"), "beyond its bound"),
        (_stages({"type": "top_k", "k": 10**9}), ("stages", 1, "k"), "beyond its bound"),
        (_stages({"type": "near_dedup", "method": "\ud800"}), ("stages", 1, "method"), "lone surrogate"),
        (_stages({"type": "bogus"}), ("stages", 1, "type"), "unknown stage type 'bogus'"),
        (_stages({"type": "top_k", "k": -1}), ("stages", 1, "k"), "k must be"),  # the stage's own check
        (_stages(5), ("stages", 1), "must be an object with a 'type' key"),  # type: ignore[arg-type]
        ({"stages": "x"}, ("stages",), "must be a list"),
        ({"stages": [], "fromat": "xml"}, ("fromat",), "Did you mean 'format'"),
        ({"preset": "nope"}, ("preset",), "unknown preset 'nope'"),
        ({"stages": [], "format": "yaml"}, ("format",), "unknown format 'yaml'"),
    ],
)
def test_pipeline_from_config_errors_carry_the_field_path(
    config: dict[str, object], loc: tuple[str | int, ...], message: str
) -> None:
    from contextwright.assembly.presets import pipeline_from_config

    with pytest.raises(errors.ConfigError, match=message) as info:
        pipeline_from_config(config)
    assert info.value.loc == loc


def test_a_stage_built_directly_names_its_setting() -> None:
    from contextwright.stages.near import NearDedup

    with pytest.raises(errors.ConfigError, match="num_perm") as info:
        NearDedup(num_perm=10**9)
    assert info.value.loc == ("num_perm",)


def test_a_format_passed_as_an_argument_is_no_config_key() -> None:
    from contextwright.assembly.presets import pipeline_from_config

    with pytest.raises(errors.ConfigError, match="unknown format 'yaml'") as info:
        pipeline_from_config({"stages": []}, format="yaml")
    assert info.value.loc == ()
