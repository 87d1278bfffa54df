#!/usr/bin/env python3
"""Tests of scripts/tidy_db.py, and that .clang-tidy's checks fail on a bug."""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = pathlib.Path(__file__).resolve().parent
ROOT = SCRIPTS.parent


class TidyDbTest(unittest.TestCase):
    def test_a_unity_member_gets_its_targets_command_alone(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            (tmp / "src").mkdir()
            for name in ("a.cc", "b.cc", "lonely.cc"):
                (tmp / "src" / name).write_text("int x;\n")
            unity = tmp / "build" / "Unity" / "unity_0_cxx.cxx"
            unity.parent.mkdir(parents=True)
            unity.write_text('#include "../../src/a.cc"\n\n#include "../../src/b.cc"\n')
            (tmp / "build" / "compile_commands.json").write_text(json.dumps([{
                "directory": str(tmp / "build"),
                "command": f"/usr/bin/c++ -Isrc -std=c++20 -o u.o -c {unity}",
                "file": str(unity)}]))
            done = subprocess.run(
                [sys.executable, SCRIPTS / "tidy_db.py", tmp / "build", tmp / "db",
                 tmp / "src" / "b.cc", tmp / "src" / "lonely.cc"],
                capture_output=True, text=True, check=True)
            self.assertEqual([pathlib.Path(line).name for line in done.stdout.split()], ["b.cc"])
            [entry] = json.loads((tmp / "db" / "compile_commands.json").read_text())
            self.assertEqual(entry["file"], str(tmp / "src" / "b.cc"))
            self.assertEqual(entry["command"],
                             f"clang++ -Isrc -std=c++20 -o u.o -c {tmp / 'src' / 'b.cc'}")

    @unittest.skipIf(shutil.which("clang-tidy") is None, "no clang-tidy on this machine")
    def test_the_checks_fail_on_a_use_after_move(self):
        with tempfile.TemporaryDirectory() as tmp:
            source = pathlib.Path(tmp) / "moved.cc"
            source.write_text(
                "#include <string>\n#include <utility>\n"
                "std::string Take(std::string s) { return s; }\n"
                "int Use() { std::string s = \"x\"; Take(std::move(s)); return s.size(); }\n")
            done = subprocess.run(
                ["clang-tidy", f"--config-file={ROOT / '.clang-tidy'}", source, "--",
                 "-std=c++20"], capture_output=True, text=True)
            self.assertNotEqual(done.returncode, 0, done.stdout)
            self.assertIn("bugprone-use-after-move", done.stdout)


if __name__ == "__main__":
    unittest.main()
