"""Reading shell lines: compound lines, wrappers, sh -c, substitutions, what cannot be read."""

from __future__ import annotations

import pytest

from gitvow_gate import shell


def lines(text: str) -> list[str]:
    found = shell.commands(text)
    assert found is not None
    return [c.line for c in found]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ls; git push", ["ls", "git push"]),
        ("make && git push || echo no", ["make", "git push", "echo no"]),
        ("cat x | xargs -I {} git push {}", ["cat x", "git push {}"]),
        ("(cd sub && git push) &", ["cd sub", "git push"]),
        ("ls\ngit push\n", ["ls", "git push"]),
        ("sudo -u root -E git push", ["git push"]),
        ("env -i A=1 B=2 git push", ["git push"]),
        ("A=1 B=2 git push", ["git push"]),
        ("time timeout 30 git push", ["git push"]),
        ("timeout -s KILL 30s nohup nice -n 5 git push", ["git push"]),
        ("bash -c 'git push --force'", ["git push --force"]),
        ("sh -lc \"cd x && git push\"", ["cd x", "git push"]),
        ("echo \"$(git push)\"", ["echo $(git push)", "git push"]),
        ("cat <<EOF\ngit push --force\nEOF\nls", ["cat", "ls"]),
        ("/usr/bin/git -C repo push", ["/usr/bin/git -C repo push"]),
    ],
)
def test_simple_commands(text: str, expected: list[str]) -> None:
    assert lines(text) == expected


def test_program_is_basename_and_wrappers_are_gone() -> None:
    (command,) = shell.commands("sudo /usr/local/bin/kubectl --context prod delete pod x") or []
    assert command.program == "kubectl"
    assert command.args == ("--context", "prod", "delete", "pod", "x")


def test_quoted_argument_of_another_program_is_not_a_command() -> None:
    found = shell.commands('gh issue create --body "please never git push --force"') or []
    assert [c.program for c in found] == ["gh"]


@pytest.mark.parametrize("text", ["eval \"$X\"", "$CMD push", "${TOOL} push", "sudo $(which git) push"])
def test_indirect_program_is_reported(text: str) -> None:
    found = shell.commands(text) or []
    assert any(c.indirect for c in found), found


def test_unbalanced_quote_cannot_be_read() -> None:
    assert shell.commands('git push "origin') is None


def test_script_runs_are_named() -> None:
    (command,) = shell.commands("bash deploy.sh") or []
    assert shell.runs_script(command) == "bash deploy.sh"
    (sourced,) = shell.commands("source env.sh") or []
    assert shell.runs_script(sourced) == "source env.sh"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('env -S"gh pr merge 1"', ["gh pr merge 1"]),
        ("env -iS'gh pr merge 1' --repo x", ["gh pr merge 1 --repo x"]),
        ("env -S 'gh pr merge 1' x", ["gh pr merge 1 x"]),
        ("env --split-string='gh pr merge 1'", ["gh pr merge 1"]),
        ("env --split-string 'gh pr merge 1'", ["gh pr merge 1"]),
        ("sudo -uroot -E gh pr merge 1", ["gh pr merge 1"]),
        ("timeout -sKILL 5 nice -n5 gh pr merge 1", ["gh pr merge 1"]),
        ("function m { gh pr merge 1; }; m", ["gh pr merge 1", "m"]),
        ("function m () { gh pr merge 1; }", ["gh pr merge 1"]),
        ("m() { gh pr merge 1; }; m", ["m", "gh pr merge 1"]),
        ("coproc gh pr merge 1", ["gh pr merge 1"]),
        ("coproc M { gh pr merge 1; }", ["gh pr merge 1"]),
        ("find . -exec gh pr merge 1 \\;", ["find . -exec gh pr merge 1", "gh pr merge 1"]),
        ("find . -execdir gh pr merge 1 {} +", ["find . -execdir gh pr merge 1 {} +", "gh pr merge 1 ./{}"]),
        ("find / src -exec rm -rf {} +", ["find / src -exec rm -rf {} +", "rm -rf /{}", "rm -rf src/{}"]),
        ("find . -ok gh pr merge 1 ';' -exec ls {} ';'",
         ["find . -ok gh pr merge 1 ; -exec ls {}", "gh pr merge 1", "ls ./{}"]),
        ("find . -exec true \\; -exec gh pr merge 1 \\;",
         ["find . -exec true ; -exec gh pr merge 1", "true", "gh pr merge 1"]),
        ("fd -x gh pr merge", ["fd -x gh pr merge", "gh pr merge"]),
        ("watch -n 5 gh pr merge 1", ["watch -n 5 gh pr merge 1", "gh pr merge 1"]),
        ("flock /tmp/l gh pr merge 1", ["flock /tmp/l gh pr merge 1", "gh pr merge 1"]),
        ("flock -w 3 /tmp/l -c 'gh pr merge 1'", ["flock -w 3 /tmp/l -c gh pr merge 1", "gh pr merge 1"]),
        ("su -c 'gh pr merge 1' bob", ["su -c gh pr merge 1 bob", "gh pr merge 1"]),
        ("alias m='gh pr merge 1'; m", ["gh pr merge 1", "m"]),
        ("script -qc 'gh pr merge 1' /dev/null", ["script -qc gh pr merge 1 /dev/null", "gh pr merge 1"]),
        ("su -lc 'gh pr merge 1' bob", ["su -lc gh pr merge 1 bob", "gh pr merge 1"]),
        ("parallel -j 2 gh pr merge ::: 1 2", ["parallel -j 2 gh pr merge ::: 1 2", "gh pr merge"]),
        ("find . -exec sh -c 'gh pr merge 1' \\;", ["find . -exec sh -c gh pr merge 1", "gh pr merge 1"]),
    ],
)
def test_commands_run_from_elsewhere_than_program_position(text: str, expected: list[str]) -> None:
    assert lines(text) == expected


def test_a_find_without_exec_runs_nothing_else() -> None:
    assert lines("find . -name '*.py' -print") == ["find . -name *.py -print"]


def test_runner_nesting_is_bounded() -> None:
    text = "find . -exec " * 8 + "gh pr merge 1"
    assert shell.commands(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # ANSI-C and translated quoting, decoded as bash decodes them
        ("$'gh' pr merge 1", ["gh pr merge 1"]),
        ("$'\\x67h' pr merge 1", ["gh pr merge 1"]),
        ("$'\\147\\u0068' pr merge 1", ["gh pr merge 1"]),
        ("g$'h' pr $\"merge\" 1", ["gh pr merge 1"]),
        ("bash -c $'gh pr merge 1\\n'", ["gh pr merge 1"]),
        ("echo $'it\\'s'; gh pr merge 1", ["echo it's", "gh pr merge 1"]),
        ("echo \"$'x'\"", ["echo $'x'"]),  # inside double quotes, $'…' is literal
        # a line continuation joins, inside double quotes too; not inside single quotes
        ("gh pr \\\nmerge 1", ["gh pr merge 1"]),
        ("g\\\nh pr merge 1 \\\n --admin", ["gh pr merge 1 --admin"]),
        ("bash -c \"gh pr \\\nmerge 1\"", ["gh pr merge 1"]),
        ("echo 'a\\\nb'", ["echo a\\\nb"]),
        # a redirection glued to the program is not part of its name
        ("gh>/dev/null pr merge 1", ["gh pr merge 1"]),
        ("gh 2>&1 pr merge 1", ["gh pr merge 1"]),
        ("echo ${x:-a>b} a>b", ["echo ${x:-a>b} a"]),  # inside ${…} it is no redirection
        # here-strings: a shell reading one runs it
        ("bash <<< 'gh pr merge 1'", ["gh pr merge 1"]),
        ("bash<<<'gh pr merge 1'", ["gh pr merge 1"]),
        ("sh -s <<< \"gh pr merge 1\"", ["gh pr merge 1"]),
        ("bash /dev/stdin <<< 'gh pr merge 1'", ["gh pr merge 1"]),
        ("source /dev/stdin <<< 'gh pr merge 1'", ["gh pr merge 1"]),
        ("cat <<< 'gh pr merge 1'", ["cat"]),  # data for a program that is no shell
        # handlers and configuration that run a line later, read as if they ran
        ("trap 'gh pr merge 1' EXIT", ["gh pr merge 1"]),
        ("git -c alias.m='!gh pr merge 1' m", ["git -c alias.m=!gh pr merge 1 m", "gh pr merge 1"]),
        ("git -c core.pager='gh pr merge 1' log", ["git -c core.pager=gh pr merge 1 log", "gh pr merge 1"]),
        ("GIT_SSH_COMMAND='gh pr merge 1' git fetch", ["git fetch", "gh pr merge 1"]),
        # programs that run their arguments as a command
        ("runuser -u bob -- gh pr merge 1", ["runuser -u bob -- gh pr merge 1", "gh pr merge 1"]),
        ("ssh -p 22 host gh pr merge 1", ["ssh -p 22 host gh pr merge 1", "gh pr merge 1"]),
        ("sg grp -c 'gh pr merge 1'", ["sg grp -c gh pr merge 1", "gh pr merge 1"]),
        ("chroot / gh pr merge 1", ["chroot / gh pr merge 1", "gh pr merge 1"]),
        ("taskset -c 0 gh pr merge 1", ["taskset -c 0 gh pr merge 1", "gh pr merge 1"]),
        ("strace -o log -f gh pr merge 1", ["strace -o log -f gh pr merge 1", "gh pr merge 1"]),
        ("systemd-run --user gh pr merge 1", ["systemd-run --user gh pr merge 1", "gh pr merge 1"]),
        ("gdb -batch --args gh pr merge 1", ["gdb -batch --args gh pr merge 1", "gh pr merge 1"]),
        ("parallel ::: 'gh pr merge 1'", ["parallel ::: gh pr merge 1", "gh pr merge 1"]),
    ],
)
def test_forms_read_as_the_shell_reads_them(text: str, expected: list[str]) -> None:
    assert lines(text) == expected


@pytest.mark.parametrize("text", ["gh$IFS'pr'$IFS'merge' 1", "{gh,pr,merge,1}", "/usr/bin/g? pr merge 1",
                                  "/usr/bin/g[h] pr merge 1", "g*h pr merge 1"])
def test_a_program_word_the_shell_expands_is_indirect(text: str) -> None:
    found = shell.commands(text)
    assert found is not None and found[0].indirect, found


@pytest.mark.parametrize("text", ["source <(echo gh pr merge 1)", ". /dev/stdin", "echo 'gh pr merge 1' | bash"])
def test_a_line_fed_from_elsewhere_is_said_to_be_read_from_stdin(text: str) -> None:
    found = shell.commands(text)
    assert found is not None and any(shell.reads_stdin(c) for c in found), found


def test_an_unbalanced_ansi_c_string_cannot_be_read() -> None:
    assert shell.commands("gh pr merge $'1") is None
