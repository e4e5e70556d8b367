#!/usr/bin/env python3
"""Every command shown with its output in README.md and docs/*.md runs, and its output
must match what the page shows, numbers included, so that no page can go stale.

A shown session is a fenced block whose first line starts with "$ ". Each "$ " line is a
command (a line ending in a backslash continues on the next); the lines after it, up to
the next "$ " line, are its standard output (a command with no lines after it shows no
output: only its exit status counts). In the shown output:

  [..]   matches any text within one line (what varies from run to run: wall times);
  ...    alone on a line, matches any number of lines (output a page leaves out).

The commands of one block run in order in one fresh folder that holds links to the
project's examples/, tests/, bench/ and scripts/, with the built `fabriclab` first on
PATH. A command may exit 0 or 1 (a "no" answer, such as an unsafe schedule, is output
worth showing); 2 or more fails the test. A block that cannot run here says why in the
line before its fence: <!-- doc-test: skip REASON -->.

  tests/docs_test.py BUILD_DIR [PAGE ...]     # default: README.md and docs/*.md
  tests/docs_test.py --update BUILD_DIR ...   # rewrite the shown outputs that differ with
                                              # what ran (a shown line that still matches,
                                              # [..] and all, stays): then read the diff
"""
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINKED = ["examples", "tests", "bench", "scripts"]
SKIP = re.compile(r"^<!-- doc-test: skip (\S.*) -->$")


def sessions(path):
    """(line number, [(command, [expected lines])], skip reason or None) per shown session."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if not body or not body[0].startswith("$ "):
            continue
        skip = None
        if start > 0 and SKIP.match(lines[start - 1].strip()):
            skip = SKIP.match(lines[start - 1].strip()).group(1)
        steps, k = [], 0
        while k < len(body):
            command = body[k][2:]
            while command.endswith("\\") and k + 1 < len(body):
                k += 1
                command = command + "\n" + body[k]
            k += 1
            expected = []
            while k < len(body) and not body[k].startswith("$ "):
                expected.append(body[k])
                k += 1
            steps.append((command, expected))
        out.append((start + 1, steps, skip))
    return out


def line_matches(pattern, line):
    parts = pattern.rstrip().split("[..]")
    regex = ".*".join(re.escape(p) for p in parts)
    return re.fullmatch(regex, line.rstrip()) is not None


def matches(expected, actual):
    """Whether the actual lines fit the shown ones ('...' lines match any run of lines)."""
    # Trailing blank lines are not shown on a page.
    while expected and not expected[-1].strip():
        expected = expected[:-1]
    while actual and not actual[-1].strip():
        actual = actual[:-1]
    memo = {}

    def fit(e, a):
        if (e, a) in memo:
            return memo[(e, a)]
        if e == len(expected):
            ok = a == len(actual)
        elif expected[e].strip() == "...":
            ok = any(fit(e + 1, b) for b in range(a, len(actual) + 1))
        else:
            ok = a < len(actual) and line_matches(expected[e], actual[a]) and fit(e + 1, a + 1)
        memo[(e, a)] = ok
        return ok

    return fit(0, 0)


def first_difference(expected, actual):
    for n, (e, a) in enumerate(zip(expected, actual)):
        if e.strip() == "...":
            return "after a '...' line, the rest differs"
        if not line_matches(e, a):
            return f"line {n + 1}:\n    shown: {e}\n    ran:   {a}"
    if len(expected) != len(actual):
        return f"the page shows {len(expected)} lines, the command printed {len(actual)}"
    return "?"


def updated(expected, actual):
    """The shown lines made to fit what ran: each line that still matches kept as shown."""
    while actual and not actual[-1].strip():
        actual = actual[:-1]
    if len(expected) != len(actual) or any(e.strip() == "..." for e in expected):
        return actual
    return [e if line_matches(e, a) else a for e, a in zip(expected, actual)]


def run_block(build, page, line, steps, fixes=None):
    failures = []
    with tempfile.TemporaryDirectory(prefix="fabriclab-doc-") as folder:
        for name in LINKED:
            os.symlink(os.path.join(ROOT, name), os.path.join(folder, name))
        env = dict(os.environ)
        env["PATH"] = build + os.pathsep + env.get("PATH", "")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")  # a page's mpirun -n 3 on 2 cores
        for command, expected in steps:
            began = time.monotonic()
            r = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=1200)
            took = time.monotonic() - began
            actual = r.stdout.split("\n")
            where = f"{page}:{line}: $ {command.splitlines()[0]}"
            if r.returncode not in (0, 1):
                failures.append(f"{where}\n  exit {r.returncode}\n  stderr: {r.stderr.strip()[-2000:]}")
            elif expected and not matches(expected, actual):
                if fixes is not None:
                    fixes.append((expected, updated(expected, actual)))
                failures.append(f"{where}\n  {first_difference(expected, actual)}\n  --- it printed:\n"
                                + "\n".join("  " + a for a in actual) + f"\n  stderr: {r.stderr.strip()[-1000:]}")
            print(f"{'ok  ' if len(failures) == 0 else 'FAIL'} {took:6.1f} s  {where}", flush=True)
            if failures:
                break  # the later commands of the block may need this one's outputs
    return failures


def rewrite(page, fixes):
    """Each shown output in `fixes` replaced, in order, in the page's text."""
    text = open(page, encoding="utf-8").read()
    at = 0
    for old, new in fixes:
        o, n = "\n".join(old), "\n".join(new)
        where = text.find("\n" + o + "\n", at)
        if where < 0:
            continue
        text = text[:where + 1] + n + text[where + 1 + len(o):]
        at = where + 1 + len(n)
    open(page, "w", encoding="utf-8").write(text)


def main():
    update = "--update" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--update"]
    if not args:
        sys.exit("usage: docs_test.py [--update] BUILD_DIR [PAGE ...]")
    build = os.path.abspath(args[0])
    pages = args[1:] or ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    failures, ran, skipped = [], 0, 0
    for page in pages:
        for line, steps, skip in sessions(os.path.join(ROOT, page)):
            if skip:
                skipped += 1
                print(f"skip {page}:{line}: {skip}")
                continue
            ran += 1
            fixes = [] if update else None
            failures += run_block(build, page, line, steps, fixes)
            if fixes:
                rewrite(os.path.join(ROOT, page), fixes)
    for f in failures:
        print("\n" + f)
    print(f"\n{ran - len(failures)} passed, {len(failures)} failed, {skipped} skipped")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
