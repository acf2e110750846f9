"""Every ``hostlink`` command starts by building the whole parser, which imports each
command group's module: none of them may pull in pandas there (about 0.5 s of a
start on the 2-core machine), only the commands that make tables."""
from __future__ import annotations

import subprocess
import sys


def test_building_the_parser_imports_no_pandas():
    code = ("import sys\n"
            "from hostlink.model.cli.main import build_parser\n"
            "build_parser()\n"
            "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
