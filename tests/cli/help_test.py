#!/usr/bin/env python3
"""Every command's help against docs/cli.md, the one vocabulary of the command line:

- an option the first table lists has, in each command it names, exactly the help the
  table gives, and no other command has it unless the second table says what it means
  there;
- an option of the second table has, in its command, exactly that help;
- an option that two or more commands have is in one of the tables (so a new command
  cannot bring a second meaning of a shared name, or a second text of one meaning,
  without the page saying so);
- every command's help ends with the exit status the page shows.

  tests/cli/help_test.py FABRICLAB DOCS_CLI_MD
"""
import re
import subprocess
import sys


def helps(fabriclab):
    top = subprocess.run([fabriclab, "--help"], capture_output=True, text=True, check=True).stdout
    commands = re.findall(r"^  ([a-z][a-z0-9-]*)\s{2,}", top.split("Subcommands:")[1], re.M)
    out = {}
    for c in commands:
        text = subprocess.run([fabriclab, c, "--help"], capture_output=True, text=True, check=True).stdout
        options, current = {}, None
        for line in text.split("\n"):
            # "  --name TYPE    help" or "  --name TYPE-too-long-for-the-column" with the help
            # on the lines after it, indented to the column.
            m = re.match(r"^  (-\S*(?: \S+)*?)(?:\s{2,}(\S.*))?$", line)
            if m:
                current = m.group(1).split()[0].split(",")[-1]
                options[current] = (m.group(2) or "").strip()
            elif current and line.startswith(" " * 10) and line.strip():
                options[current] = (options[current] + " " + line.strip()).strip()
            else:
                current = None
        out[c] = (options, text.rstrip("\n").split("\n")[-1])
    return out


def cells(row):
    parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def tables(page):
    """The shared table's rows and the per-command table's, and the exit status line."""
    text = open(page, encoding="utf-8").read()
    exit_line = re.search(r"## Exit status.*?```\n(.*?)\n```", text, re.S).group(1)
    sections = re.split(r"^## ", text, flags=re.M)
    shared, own = [], []
    for s in sections:
        rows = [cells(line) for line in s.split("\n") if line.startswith("| `")]
        if s.startswith("Options every command spells the same"):
            shared = [(r[0].strip("`").split()[0], [c.strip() for c in r[1].split(",")], r[2]) for r in rows]
        elif s.startswith("Options of one name"):
            own = [(r[0].strip("`").split()[0], r[1], r[2]) for r in rows]
    return shared, own, exit_line


def main():
    fabriclab, page = sys.argv[1], sys.argv[2]
    commands = helps(fabriclab)
    shared, own, exit_line = tables(page)
    failures, checked = [], 0

    def check(ok, what):
        nonlocal checked
        checked += 1
        if not ok:
            failures.append(what)

    listed = {}  # (option, command) -> the help the page gives it
    for option, names, text in shared:
        for c in names:
            check(c in commands, f"docs/cli.md names a command '{c}' that does not exist ({option})")
            listed[(option, c)] = text
    for option, c, text in own:
        check((option, c) not in listed, f"{option} of {c} is in both tables")
        listed[(option, c)] = text
    for (option, c), text in sorted(listed.items()):
        if c not in commands:
            continue
        options = commands[c][0]
        check(option in options, f"{c} has no {option}, which docs/cli.md gives it")
        if option in options:
            check(options[option] == text, f"{c} {option}:\n    help:      {options[option]}\n    docs/cli.md: {text}")
    have = {}
    for c, (options, _) in commands.items():
        for option in options:
            if option != "--help":
                have.setdefault(option, []).append(c)
    for option, names in sorted(have.items()):
        if len(names) < 2:
            continue
        for c in names:
            check((option, c) in listed,
                  f"{option} is an option of {', '.join(names)}: docs/cli.md must list it for {c}")
    for c, (_, last) in commands.items():
        check(last == exit_line, f"{c} --help ends with\n    {last}\n  and not with docs/cli.md's exit status")
    for f in failures:
        print("FAIL " + f)
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
