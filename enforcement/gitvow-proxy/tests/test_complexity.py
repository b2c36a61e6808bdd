"""Every function the proxy ships stays simple enough to read: radon's cyclomatic complexity <= 20."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

import gitvow_proxy

LIMIT = 20


def test_every_function_of_the_proxy_is_at_most_complexity_20() -> None:
    source = Path(gitvow_proxy.__file__).parent
    files = sorted(source.rglob("*.py"))
    assert len(files) > 30  # the whole distribution, not an empty directory
    over = [f"{path.relative_to(source)}:{block.lineno} {block.fullname} = {block.complexity}"
            for path in files for block in cc_visit(path.read_text(encoding="utf-8"))
            if block.complexity > LIMIT]
    assert over == [], "split these functions:\n" + "\n".join(over)
