#!/usr/bin/env python3
"""Tests of scripts/check_function_length.py on small trees of its own making."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = pathlib.Path(__file__).resolve().parent
CHECK = SCRIPTS / "check_function_length.py"
sys.path.insert(0, str(SCRIPTS))
import check_function_length  # noqa: E402


def body(lines):
    return "".join(f"  x += {i};\n" for i in range(lines))


class CheckFunctionLengthTest(unittest.TestCase):
    def run_on(self, files):
        with tempfile.TemporaryDirectory() as root:
            root = pathlib.Path(root)
            for path, text in files.items():
                (root / "src" / path).parent.mkdir(parents=True, exist_ok=True)
                (root / "src" / path).write_text(text)
            done = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
            return done.returncode, done.stderr

    def test_short_functions_pass(self):
        text = "namespace a {\n\nint F() {\n" + body(78) + "}\n\n}  // namespace a\n"
        self.assertEqual(self.run_on({"m/f.cc": text}), (0, ""))

    def test_a_long_function_fails_with_its_place_name_and_length(self):
        text = ("#include <x>\n\nnamespace a {\n\nint Foo::Bar(int y,\n             int z) const {\n"
                + body(80) + "}\n\n}  // namespace a\n")
        code, err = self.run_on({"m/f.cc": text})
        self.assertEqual(code, 1)
        self.assertEqual(err, 'src/m/f.cc:5: Foo::Bar is 83 lines (over 80); split it or say '
                              'why with a "// Long because: ..." comment\n')

    def test_a_reason_in_the_comment_above_lets_it_pass(self):
        text = ("// Does things.\n// Long because: one case per kind.\n// More.\n"
                "template <typename T>\nvoid F() {\n" + body(90) + "}\n")
        self.assertEqual(self.run_on({"m/f.h": text}), (0, ""))
        # The comment must be right above the definition.
        code, _ = self.run_on({"m/f.h": text.replace("// More.\n", "// More.\n\n")})
        self.assertEqual(code, 1)

    def test_tests_fuzzers_and_benchmarks_are_not_checked(self):
        text = "void F() {\n" + body(90) + "}\n"
        for name in ("f_test.cc", "f_fuzzer.cc", "f_benchmark.cc"):
            self.assertEqual(self.run_on({"m/" + name: text}), (0, ""))

    def test_classes_lambdas_and_initializers_are_no_functions(self):
        text = ("class C {\n void F() {\n" + body(90) + " }\n};\n"
                "const auto kF = [](int x) {\n" + body(90) + "};\n"
                "const std::vector<Flag> kFlags = {\n" + body(90) + "};\n"
                "enum class E {\n" + body(90) + "};\n")
        self.assertEqual(self.run_on({"m/f.cc": text}), (0, ""))

    def test_braces_in_literals_comments_and_default_arguments_are_skipped(self):
        text = ('const char* kS = R"(\n}\n{\n)";\n'
                "void F(const std::vector<int>& v = {}, int n = 1'000) {\n"
                '  // }\n  /* {\n}\n */\n  char c = \'}\';\n  std::string s = "}";\n'
                + body(80) + "}\n")
        self.assertEqual(list(check_function_length.definitions(text)), [(5, 92, "F")])

    def test_constructors_with_brace_initializers_count_from_their_name(self):
        text = "Foo::Foo(int x)\n    : a_{x},\n      b_(x) {\n" + body(2) + "}\n"
        self.assertEqual(list(check_function_length.definitions(text)), [(1, 6, "Foo::Foo")])


if __name__ == "__main__":
    unittest.main()
