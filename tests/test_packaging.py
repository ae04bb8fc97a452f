"""What the installed package promises besides pooling: the type stub of the extension, the
typing marker and the command line's --version."""

import ast
import os
import subprocess
import sys

import avgpool
from avgpool import _core

_PACKAGE = os.path.dirname(os.path.abspath(avgpool.__file__))


def test_core_stub_declares_only_what_the_extension_has():
    """_core.pyi (read by mypy) must not declare a name or method the compiled module lacks."""
    with open(os.path.join(_PACKAGE, "_core.pyi")) as f:
        tree = ast.parse(f.read())
    missing = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name != "__getattr__":
            if not callable(getattr(_core, node.name, None)):
                missing.append(node.name)
        elif isinstance(node, ast.ClassDef):
            cls = getattr(_core, node.name, None)
            if cls is None:
                missing.append(node.name)
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not hasattr(cls, item.name):
                    missing.append(f"{node.name}.{item.name}")
    assert not missing, f"declared in _core.pyi but not in the extension: {missing}"


def test_typed_marker_is_installed():
    assert os.path.isfile(os.path.join(_PACKAGE, "py.typed"))


def test_version_flag():
    out = subprocess.run([sys.executable, "-m", "avgpool", "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == f"avgpool {avgpool.__version__}"
