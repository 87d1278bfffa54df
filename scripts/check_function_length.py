#!/usr/bin/env python3
"""Lists the functions of src/ longer than 80 lines that do not say why.

../shared/STYLE.md: "Functions that fit on a screen; over 80 lines needs a
written reason." This script reads every src/**/*.cc and src/**/*.h except
tests (`*_test.cc`, `*_fuzzer.cc`, `*_benchmark.cc`) and fails, one line
per function, when a function definition at namespace scope is longer than
80 lines (its first line, `template <...>` included, to its closing brace)
and the `//` comment block directly above it has no line containing

    // Long because: <the reason>

A function that is long because splitting it would not help the reader
(one switch over every kind, a table written out) keeps its length and
says so in that comment.

How it reads C++: comments, string and character literals (raw strings
too) and preprocessor lines are blanked first; then braces are counted.
Braces opened by `namespace ... {` and `extern "C" {` do not count. At
namespace scope a definition is a statement that ends at a brace group
not followed by `,`, `{` or `;` and whose text before the first `{` has
a `(`, no `=` (so lambdas and initializers bound to a name are skipped)
and does not start with class/struct/union/enum. Member functions defined
inside a class body are not checked (keep them short, or move them out).

  scripts/check_function_length.py [REPO_ROOT]
"""
import argparse
import pathlib
import re
import sys

LIMIT = 80
MARKER = "Long because"

TEST_SUFFIXES = ("_test.cc", "_fuzzer.cc", "_benchmark.cc")
NOT_FUNCTIONS = {"class", "struct", "union", "enum", "namespace", "typedef", "using"}
NUMBER_BEFORE = re.compile(r"(?<![\w'])\d[\w']*$")
RAW_STRING_START = re.compile(r'R"([^()\\ ]{0,16})\(')


def blank_code(text):
    """Returns the lines of `text` with comments, literals and preprocessor
    lines replaced by spaces, so that only code braces and parentheses are
    left. The number of lines is kept."""
    out = []
    i, n = 0, len(text)
    line_start = True
    in_directive = False
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            # A directive continues past a line ending in a backslash.
            if in_directive and not (i > 0 and text[i - 1] == "\\"):
                in_directive = False
            line_start = True
            i += 1
            continue
        if in_directive:
            out.append(" ")
            i += 1
            continue
        if line_start and c == "#":
            in_directive = True
            out.append(" ")
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = RAW_STRING_START.match(text, i) if c == "R" else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, raw.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:end]))
            i = end
            continue
        if c in "\"'":
            # A ' between digits is a digit separator (1'000), not a literal.
            if c == "'" and NUMBER_BEFORE.search(text, max(0, i - 32), i):
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n and text[j] == c else ""))
            i = j + 1 if j < n and text[j] == c else j
            continue
        out.append(c)
        i += 1
    return "".join(out).split("\n")


def top_level(header, ch):
    """The index of the first `ch` in `header` outside (), <> and [], or -1."""
    depth = 0
    for k, c in enumerate(header):
        if c in "([<":
            if c == "<" and header[max(0, k - 8):k].endswith("operator"):
                continue
            depth += 1
        elif c in ")]>":
            if c == ">" and (header[k - 1:k] == "-" or header[max(0, k - 8):k].endswith("operator")):
                continue
            depth = max(0, depth - 1)
        elif c == ch and depth == 0:
            return k
    return -1


def function_name(header):
    """The qualified name before the parameter list, or None when the
    statement is no function definition."""
    header = " ".join(header.split())
    words = header.split()
    if not words or words[0] in NOT_FUNCTIONS:
        return None
    if words[0] == "template":
        # Look past the template head: `template <...> class Foo {` is a class.
        head = re.match(r"template\s*", header)
        close = top_level(header[head.end():], ">") if header[head.end():].startswith("<") else -1
        header = header[head.end():][close + 1:].strip() if close >= 0 else header
        words = header.split()
        if not words or words[0] in NOT_FUNCTIONS:
            return None
    paren = header.find("(")
    if paren < 0:
        return None
    before = header[:paren]
    eq = before.find("=")
    if eq >= 0 and not before[:eq].rstrip().endswith("operator"):
        return None
    if before.rstrip().endswith("operator"):
        match = re.search(r"([\w:~]*operator)\s*$", before)
        return match.group(1) + "()" if match else None
    match = re.search(r"([\w:~]+(?:operator\s*\S+)?)\s*$", before)
    return match.group(1) if match else None


def definitions(text):
    """Yields (first line, last line, name) of each function defined at
    namespace scope, lines counted from 1."""
    lines = blank_code(text)
    stack = []  # "ns" for namespace braces, "code" for anything else
    header = []  # code text of the statement being read at namespace scope
    start = None  # its first line
    body_end = None
    parens = 0  # depth of ( and [ in the header
    for number, line in enumerate(lines, 1):
        for c in line:
            at_top = all(kind == "ns" for kind in stack)
            if at_top:
                if body_end is not None:
                    # The statement's last brace group closed: it continues
                    # only with `,` or `{` (a member initializer list).
                    if c.isspace():
                        continue
                    if c not in ",{":
                        name = function_name("".join(header)) if c != ";" else None
                        if name:
                            yield start, body_end, name
                        header, start, body_end = [], None, None
                        if c == ";":
                            continue
                    else:
                        body_end = None
                # Inside a parameter list (default arguments `= {}`) or an
                # attribute, braces and semicolons are the header's text.
                parens += (c in "([") - (c in ")]")
                if parens > 0 or c in ")]":
                    if start is None:
                        start = number
                    header.append(c)
                    continue
                parens = 0
                if c == ";":
                    header, start = [], None
                    continue
                if c == "}":  # closes a namespace
                    if stack:
                        stack.pop()
                    header, start = [], None
                    continue
                if c == "{":
                    text_before = "".join(header).split()
                    if text_before[:1] in (["namespace"], ["extern"]):
                        stack.append("ns")
                        header, start = [], None
                    else:
                        stack.append("code")
                        if start is None:
                            start = number
                    continue
                if not c.isspace() and start is None:
                    start = number
                header.append(c)
                continue
            if c == "{":
                stack.append("code")
            elif c == "}" and stack:
                stack.pop()
                if all(kind == "ns" for kind in stack):
                    body_end = number
        if all(kind == "ns" for kind in stack):
            header.append(" ")
    if body_end is not None:
        name = function_name("".join(header))
        if name:
            yield start, body_end, name


def has_reason(source_lines, first):
    """Whether the `//` block right above line `first` gives a reason."""
    k = first - 2
    while k >= 0 and source_lines[k].lstrip().startswith("//"):
        if MARKER in source_lines[k]:
            return True
        k -= 1
    return False


def is_checked(path):
    return path.suffix in (".cc", ".h") and not path.name.endswith(TEST_SUFFIXES)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=f'A function may be longer than {LIMIT} lines when the "//" comment block '
               f'directly above it has a line with "{MARKER}", as in\n'
               f'  // {MARKER}: one case per Kubernetes kind; the table reads best whole.\n'
               f"See ../shared/STYLE.md (Size) and docs/architecture.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", default=".", help="the repository root (default: .)")
    args = parser.parse_args()
    root = pathlib.Path(args.root)
    problems = []
    for path in sorted((root / "src").rglob("*")):
        if not path.is_file() or not is_checked(path):
            continue
        text = path.read_text(errors="replace")
        source_lines = text.split("\n")
        where = path.relative_to(root).as_posix()
        for first, last, name in definitions(text):
            length = last - first + 1
            if length <= LIMIT or has_reason(source_lines, first):
                continue
            problems.append(f"{where}:{first}: {name} is {length} lines (over {LIMIT}); split it "
                            f'or say why with a "// {MARKER}: ..." comment')
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
