"""The in-tree build backend makes an installable wheel with the typing marker, from the standard library alone."""

from __future__ import annotations

import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import build_backend  # noqa: E402


class Wheel(unittest.TestCase):
    def test_the_wheel_holds_every_module_py_typed_and_a_record_of_each(self) -> None:
        with tempfile.TemporaryDirectory() as out:
            name = build_backend.build_wheel(out)
            self.assertEqual(name, "runledger-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(Path(out) / name) as wheel:
                names = set(wheel.namelist())
                record = wheel.read("runledger-0.1.0.dist-info/RECORD").decode()
                metadata = wheel.read("runledger-0.1.0.dist-info/METADATA").decode()
        for module in ("__init__", "client", "worker", "heartbeats", "errors", "duration"):
            self.assertIn(f"runledger/{module}.py", names)
        self.assertIn("runledger/py.typed", names)
        self.assertEqual({line.split(",")[0] for line in record.splitlines()}, names)
        self.assertIn("Requires-Python: >=3.10", metadata)
        self.assertEqual(build_backend.get_requires_for_build_wheel(), [])


if __name__ == "__main__":
    unittest.main()
