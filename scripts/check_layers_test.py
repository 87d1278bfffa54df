#!/usr/bin/env python3
"""Tests of scripts/check_layers.py on small trees of its own making."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).resolve().parent / "check_layers.py"


class CheckLayersTest(unittest.TestCase):
    def run_on(self, layers, files):
        with tempfile.TemporaryDirectory() as root:
            root = pathlib.Path(root)
            for folder in ("core", "kube", "cli/common"):
                (root / "src" / folder).mkdir(parents=True)
            for path, text in files.items():
                (root / "src" / path).write_text(text)
            (root / "docs").mkdir()
            (root / "docs" / "architecture.md").write_text(
                "<!-- layers: begin -->\n```\n" + layers + "\n```\n<!-- layers: end -->\n")
            done = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
            return done.returncode, done.stderr

    GOOD = "core\nkube core\ncli/common kube\nproto"

    def test_a_graph_that_matches_the_code_passes(self):
        code, err = self.run_on(self.GOOD, {"kube/a.cc": '#include "core/b.h"\n',
                                            "cli/common/c.cc": '#include "kube/a.h"\n'})
        self.assertEqual((code, err), (0, ""))

    def test_an_include_the_graph_does_not_allow_fails(self):
        code, err = self.run_on(self.GOOD, {"kube/a.cc": '#include "core/b.h"\n',
                                            "cli/common/c.cc": '#include "kube/a.h"\n',
                                            "core/d.cc": '#include "kube/a.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn("src/core/d.cc: includes kube/a.h, but docs/architecture.md does not let "
                      "core use kube", err)

    def test_an_edge_the_code_no_longer_uses_fails(self):
        code, err = self.run_on(self.GOOD, {"kube/a.cc": '#include "core/b.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn("cli/common lists kube, which its code does not include", err)

    def test_a_folder_without_a_line_fails(self):
        code, err = self.run_on("core\nkube core\nproto", {"kube/a.cc": '#include "core/b.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn("no line for the folder cli/common", err)

    def test_a_cycle_fails(self):
        code, err = self.run_on("core kube\nkube core\ncli/common\nproto",
                                {"kube/a.cc": '#include "core/b.h"\n',
                                 "core/b.cc": '#include "kube/a.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn("a cycle: core -> kube -> core", err)

    def test_tests_may_use_other_folders_but_not_close_a_cycle(self):
        files = {"kube/a.cc": '#include "core/b.h"\n',
                 "cli/common/c.cc": '#include "kube/a.h"\n',
                 "kube/a_test.cc": '#include "cli/common/x.h"\n'}
        code, err = self.run_on(self.GOOD, files)
        self.assertEqual(code, 1)
        self.assertIn("a test of kube includes cli/common/x.h, but cli/common depends on kube",
                      err)
        files["kube/a_test.cc"] = '#include "core/testing/fake.h"\n'
        self.assertEqual(self.run_on(self.GOOD, files), (0, ""))


if __name__ == "__main__":
    unittest.main()
