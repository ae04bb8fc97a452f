"""The documentation's examples run as written: every docstring example (doctest, its printed
results compared) and the README's Python blocks (run in order in one namespace, as a reader
pastes them); docs/c-library.md names every function of the C header."""

import doctest
import importlib
import pathlib
import re

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# each public module, and the test extra it needs beyond numpy
MODULES = [("avgpool", None), ("avgpool._api", None), ("avgpool._desc", None),
           ("avgpool.functional", None), ("avgpool.onnx", None), ("avgpool.openvino", None),
           ("avgpool.directml", None), ("avgpool.torch", "torch"), ("avgpool.dask", "dask"),
           ("avgpool.xarray", "xarray")]


@pytest.mark.one_path  # the examples' values hold on every path; the paths are checked elsewhere
@pytest.mark.parametrize("name, extra", MODULES, ids=[m[0] for m in MODULES])
def test_docstring_examples(name, extra):
    if extra:
        pytest.importorskip(extra, reason=f"{extra} is a test extra")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, result
    assert result.attempted > 0, f"{name} has no examples"


def _readme_blocks():
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


@pytest.mark.one_path
def test_readme_python_blocks_run():
    """Each block after the ones before it, as the README reads; the names no block defines
    (the loop's `batches`, the model `other_model`) are given."""
    for extra in ("torch", "dask", "xarray"):
        pytest.importorskip(extra, reason=f"{extra} is a test extra")
    blocks = _readme_blocks()
    assert len(blocks) >= 5
    namespace = {}
    for i, block in enumerate(blocks):
        if "batches" in block:
            namespace["batches"] = [np.zeros(namespace["x"].shape, np.float32)] * 2
        if "other_model" in block:
            import torch

            namespace["other_model"] = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1))
        exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)


@pytest.mark.one_path
def test_c_library_doc_names_every_entry_point():
    header = (ROOT / "csrc" / "include" / "avgpool.h").read_text()
    functions = set(re.findall(r"^AP_API [^(]*?\b(ap_\w+)\(", header, re.M))
    assert len(functions) > 40
    doc = (ROOT / "docs" / "c-library.md").read_text()
    assert sorted(f for f in functions if f"`{f}`" not in doc) == []
