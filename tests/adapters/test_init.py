"""The adapters package imports no framework until a name from it is used."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("langchain_core", "llama_index", "haystack")


def _loaded_after(code: str) -> set[str]:
    """The framework packages in sys.modules after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(','.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return set(out.stdout.strip().splitlines()[-1].split(",")) & set(FRAMEWORKS)


def test_import_contextwright_and_its_adapters_package_imports_no_framework() -> None:
    assert _loaded_after("import contextwright, contextwright.adapters") == set()


@pytest.mark.parametrize(
    ("name", "framework"),
    [
        ("ContextwrightRunnable", "langchain_core"),
        ("ContextwrightCompressor", "langchain_core"),
        ("ContextwrightPostprocessor", "llama_index"),
        ("ContextwrightAssembler", "haystack"),
    ],
)
def test_a_name_from_the_adapters_package_imports_only_its_framework(name: str, framework: str) -> None:
    pytest.importorskip(framework)
    assert _loaded_after(f"from contextwright.adapters import {name}") == {framework}


def test_unknown_adapter_name_is_an_attribute_error() -> None:
    import contextwright.adapters as adapters

    with pytest.raises(AttributeError, match=r"has no attribute 'ContextwrightMagic'"):
        _ = adapters.ContextwrightMagic


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("contextwright.adapters.langchain", "langchain_core", "langchain"),
        ("contextwright.adapters.llamaindex", "llama_index", "llamaindex"),
        ("contextwright.adapters.haystack", "haystack", "haystack"),
    ],
)
def test_missing_framework_names_the_extra_to_install(module: str, blocked: str, extra: str) -> None:
    # sys.modules[name] = None makes "import name" fail as if the package were not installed.
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from contextwright.core.errors import MissingDependencyError\n"
        f"try:\n    import {module}\nexcept MissingDependencyError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert f"pip install 'contextwright[{extra}]'" in out.stdout
