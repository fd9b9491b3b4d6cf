"""Build hook: compile ``contextwright._native`` (C word profiles for containment dedup), optionally.

The package is complete without it: ``contextwright.stages.profiles`` falls back to the same
profiles in Python. So a machine without a C compiler, or ``CONTEXTWRIGHT_PURE=1``, still
installs; the build then says why on stderr and the wheel stays pure Python.

* editable install (``pip install -e .``): the extension is built in place, beside the sources
  under ``src/contextwright/`` (git-ignored), which the editable install puts on the path;
* wheel: it is built in a temporary folder and put into the wheel, which is then tagged for
  this interpreter and platform.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODULE = "contextwright._native"
SOURCE = "src/contextwright/_native.c"


def _compile(root: Path, out_dir: Path, temp_dir: Path) -> Path:
    """Build the extension into ``out_dir`` (setuptools' build_ext: the platform's compiler and flags)."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    ext = Extension(MODULE, [str(root / SOURCE)])
    dist = Distribution({"name": "contextwright", "ext_modules": [ext]})
    cmd = build_ext(dist)
    cmd.build_lib = str(out_dir)
    cmd.build_temp = str(temp_dir)
    cmd.ensure_finalized()
    cmd.run()
    return Path(cmd.get_ext_fullpath(MODULE))


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    _temp: Path | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        if version == "editable":  # never a stale build beside the sources
            for old in (root / "src" / "contextwright").glob("_native.*"):
                if old.suffix in (".so", ".pyd"):
                    old.unlink()
        if os.environ.get("CONTEXTWRIGHT_PURE", "") not in ("", "0"):
            print(
                "contextwright: CONTEXTWRIGHT_PURE is set; the C word profiles are not built", file=sys.stderr
            )
            return
        self._temp = temp = Path(tempfile.mkdtemp(prefix="contextwright-native-"))
        try:
            built = _compile(root, temp / "lib", temp / "obj")
        except (Exception, SystemExit) as exc:  # any failure leaves the pure-Python package
            print(
                f"contextwright: the C word profiles were not built ({type(exc).__name__}: {exc}); "
                "containment dedup uses its Python path: the same results, slower",
                file=sys.stderr,
            )
            return
        if version == "editable":
            shutil.copy2(built, root / "src" / "contextwright" / built.name)
        else:
            build_data["force_include"][str(built)] = f"contextwright/{built.name}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
