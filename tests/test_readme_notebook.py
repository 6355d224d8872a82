"""The README's notebook example reproduces a downloaded Pipeline bundle's numbers with attn_core."""

from __future__ import annotations

import re

from tests.conftest import ROOT, open_view
from tests.test_app_export import BUNDLE, PIPELINE, click, downloads

__all__ = ["downloads"]  # the fixture that records the download buttons' callables


def test_readme_snippet_reproduces_a_downloaded_bundle(downloads, tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Export and share") :]
    snippet = re.search(r"```python\n(.*?)```", section, re.S)[1]
    at = open_view(PIPELINE, text="my friend reads an old book", seed="5", d_k="4", pos="on")
    ((name, bundle),) = click(at, downloads, BUNDLE)
    (tmp_path / name).write_bytes(bundle)
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "README.md", "exec"), {})  # its assert compares attn_core's weights with the bundle's
