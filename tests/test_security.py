"""Security basics, checked on the source: user text never reaches raw HTML, nothing a user supplies is unpickled, and
the only HTML the app writes is its own constant stylesheets (or an entry of a table of them). (The model file's
SHA-256 check is tested in tests/test_minilm.py; the memory and time budgets of the Cost view in
tests/test_app_cost.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

SOURCES = sorted([ROOT / "streamlit_app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "attn_ui").glob("*.py")])
ENGINE = sorted((ROOT / "attn_core").rglob("*.py"))
UNSAFE_CALLS = {"load", "loads", "Unpickler"}  # torch.load, pickle.load(s): arbitrary code from a file


def calls(path: Path) -> list[ast.Call]:
    return [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]


def name_of(call: ast.Call) -> str:
    return ast.unparse(call.func)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_html_is_only_the_apps_own_constant_styles(path):
    for call in calls(path):
        if name_of(call).endswith(".html") or name_of(call) == "html":
            given = call.args[0] if len(call.args) == 1 else None
            constant = given.value if isinstance(given, ast.Subscript) else given  # a constant, or an entry of a table
            assert isinstance(constant, ast.Name) and constant.id.isupper(), (
                f"{path.name}:{call.lineno}: st.html must be given a module constant (or an entry of one), "
                f"not {ast.unparse(call.args[0])}"
            )
        for keyword in call.keywords:
            assert keyword.arg != "unsafe_allow_html", f"{path.name}:{call.lineno}: unsafe_allow_html"


@pytest.mark.parametrize("path", SOURCES + ENGINE, ids=lambda p: p.name)
def test_nothing_is_unpickled(path):
    for call in calls(path):
        name = name_of(call)
        assert not (name.split(".")[-1] in UNSAFE_CALLS and name.split(".")[0] in ("torch", "pickle", "dill")), (
            f"{path.name}:{call.lineno}: {name} would run code from the file"
        )
