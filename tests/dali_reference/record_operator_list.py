"""Record the public operators of DALI's ``nvidia.dali.fn`` into ``docs/dali_operators.txt``.

Runs with any Python that has DALI (``pip install nvidia-dali-cuda130``; no
GPU needed)::

    python tests/dali_reference/record_operator_list.py

One operator per line, with its namespace (``decoders.image``,
``experimental.remap``); a deprecated alias is followed by ``deprecated:`` and
the name DALI's documentation points to. DALI's ``hidden`` namespaces
(internal, undocumented) are left out. ``docs/operator_table.py`` reads the file.
"""

from __future__ import annotations

import re
import types
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "docs" / "dali_operators.txt"
_DEPRECATED = (re.compile(r"now deprecated\. Use :meth:`([\w.]+)`"), re.compile(r"deprecated[^`]*:meth:`([\w.]+)`"))


def operators() -> list[str]:
    import nvidia.dali as dali
    from nvidia.dali import fn

    rows: list[str] = [f"# DALI {dali.__version__}: the public operators of nvidia.dali.fn"]
    seen: set[int] = set()

    def walk(module: types.ModuleType, prefix: str) -> None:
        for name in sorted(dir(module)):
            obj = getattr(module, name)
            if name.startswith("_") or name == "hidden":
                continue
            if isinstance(obj, types.ModuleType):
                if obj.__name__.startswith("nvidia.dali.fn") and id(obj) not in seen:
                    seen.add(id(obj))
                    walk(obj, f"{prefix}{name}.")
                continue
            if callable(obj):
                doc = obj.__doc__ or ""
                match = _DEPRECATED[0].search(doc) or _DEPRECATED[1].search(doc[:600])
                note = f"  deprecated: {match.group(1).replace('nvidia.dali.fn.', '')}" if match else ""
                rows.append(f"{prefix}{name}{note}")

    walk(fn, "")
    return rows


if __name__ == "__main__":
    OUT.write_text("\n".join(operators()) + "\n")
    print(OUT)
