"""What a command reaches, read from flags and local files before it runs.

A rule on text cannot tell ``kubectl apply`` against a throwaway cluster from the same
words against production; a ``target`` regex on the command's target can. Targets are read
offline and only once a ``{program, verbs}`` rule with a ``target`` has matched: the kube
context (``--context`` or the kubeconfig's ``current-context``) and namespace, the push
remote's URL and destination branch, the terraform workspace.

Each reader returns a short string such as ``context=prod namespace=billing`` or None when
the target cannot be read. None matches every ``target`` rule: an action whose reach is
unknown is asked about, never waved through.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence

from gitvow.argv import option_value, positionals

_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
_CURRENT_CONTEXT = re.compile(r"^current-context:\s*['\"]?([^'\"\s]+)")
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"})
_PUSH_VALUE_OPTIONS = frozenset({"--repo", "-o", "--push-option", "--receive-pack", "--exec"})



def _current_context(explicit: str | None, env: Mapping[str, str]) -> str | None:
    if explicit:
        paths = [explicit]
    else:
        default = os.path.join(env.get("HOME", os.path.expanduser("~")), ".kube", "config")
        paths = (env.get("KUBECONFIG") or default).split(os.pathsep)
    for path in paths:
        try:
            with open(os.path.expanduser(path), encoding="utf-8") as fh:
                for line in fh:
                    match = _CURRENT_CONTEXT.match(line)
                    if match:
                        return match.group(1)
        except OSError:
            continue
    return None


def kube(args: Sequence[str], env: Mapping[str, str], context_flag: str) -> str | None:
    context = option_value(args, (context_flag,)) or _current_context(option_value(args, ("--kubeconfig",)), env)
    if not context:
        return None
    namespace = option_value(args, ("--namespace", "-n"))
    return f"context={context}" + (f" namespace={namespace}" if namespace else "")


def _git_dirs(cwd: str) -> tuple[str, str] | None:
    """The repository's git directory (HEAD) and common directory (config), found as git finds them."""
    here = os.path.abspath(cwd)
    while True:
        dot = os.path.join(here, ".git")
        if os.path.isdir(dot):
            git_dir = dot
            break
        if os.path.isfile(dot):
            try:
                with open(dot, encoding="utf-8") as fh:
                    line = fh.read().strip()
            except OSError:
                return None
            if not line.startswith("gitdir:"):
                return None
            git_dir = os.path.join(here, line[len("gitdir:"):].strip())
            break
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    common = git_dir
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
            common = os.path.join(git_dir, fh.read().strip())
    except OSError:
        pass
    return git_dir, common


def _remote_url_from_files(remote: str, cwd: str) -> tuple[bool, str | None]:
    """``(known, url)`` read from the repository's config file without running git.

    Only a plain config is read here: one with includes, URL rewriting (``insteadOf``) or
    ``pushurl`` is left to ``git remote get-url`` itself (``known`` False), so the answer is
    always git's own.
    """
    dirs = _git_dirs(cwd)
    if dirs is None:
        return False, None
    try:
        with open(os.path.join(dirs[1], "config"), encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return False, None
    return _remote_url_in_config(text, remote)


#: What a plain config parse cannot answer: a remote's URL read "from the files" is not git's.
_UNKNOWN: tuple[bool, str | None] = (False, None)


def _remote_url_in_config(text: str, remote: str) -> tuple[bool, str | None]:
    """``(known, url)`` of ``remote`` in a config file's text (see :func:`_remote_url_from_files`)."""
    lowered = text.lower()
    if "[include" in lowered or "insteadof" in lowered or "pushurl" in lowered or "\\\n" in text:
        return _UNKNOWN
    header = f'[remote "{remote}"]'
    section = ""
    urls: list[str | None] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        name, eq, value = line.partition("=")
        if eq and name.strip().lower() == "url" and section == header:
            urls.append(_config_value(value))
    if len(urls) > 1 or None in urls:
        return _UNKNOWN  # several urls (let git say which), or one quoted past what is read here
    if not urls and header.lower() in lowered:
        return _UNKNOWN  # a section spelled some other way: ask git
    return True, (urls[0] if urls else None)


def _config_value(value: str) -> str | None:
    """A config value, its surrounding quotes removed; None if it holds quoting or escapes."""
    value = value.strip()
    if value.startswith('"') and value.endswith('"') and len(value) > 1:
        value = value[1:-1]
    return None if '"' in value or "\\" in value else value


def _branch_from_files(cwd: str) -> tuple[bool, str | None]:
    dirs = _git_dirs(cwd)
    if dirs is None:
        return False, None
    try:
        with open(os.path.join(dirs[0], "HEAD"), encoding="utf-8") as fh:
            head = fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return False, None
    if head.startswith("ref: refs/heads/"):
        return True, head[len("ref: refs/heads/"):]
    if head.startswith("ref:"):
        return False, None
    return True, None  # detached


def _git(args: Sequence[str], cwd: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_push(args: Sequence[str], cwd: str | None) -> str | None:
    """``remote=<url> branch=<name>``: the named remote (else ``origin``), the refspec's
    destination (else the current branch)."""
    positional = positionals(args, _PUSH_VALUE_OPTIONS)
    remote = positional[0] if positional else "origin"
    branch: str | None = None
    if len(positional) > 1:
        spec = positional[1].lstrip("+")
        branch = spec.split(":", 1)[1] if ":" in spec else spec
        branch = branch.removeprefix("refs/heads/")
    if not cwd or not os.path.isdir(cwd):
        return None
    # the repository's own files when they are plain (a git process costs the hook more than
    # the rest of the decision), else git itself
    known, url = _remote_url_from_files(remote, cwd)
    if not known:
        url = _git(["remote", "get-url", remote], cwd)
    if url is None:
        # a URL given in place of a remote name is its own target
        if "://" in remote or "@" in remote or os.path.isdir(remote):
            url = remote
        else:
            return None
    url = _USERINFO.sub("", url)  # a token in the remote URL never reaches a message or a log
    if not branch or branch == "HEAD":
        known, branch = _branch_from_files(cwd)
        if not known:
            branch = _git(["symbolic-ref", "-q", "--short", "HEAD"], cwd)
    if not branch:
        return None  # detached HEAD: where the push lands cannot be read
    return f"remote={url} branch={branch}"


def terraform(args: Sequence[str], cwd: str | None) -> str:
    directory = option_value(args, ("-chdir",)) or "."
    base = directory if os.path.isabs(directory) else os.path.join(cwd or ".", directory)
    workspace = "default"
    try:
        with open(os.path.join(base, ".terraform", "environment"), encoding="utf-8") as fh:
            workspace = fh.read().strip() or "default"
    except OSError:
        pass
    return f"workspace={workspace} dir={os.path.normpath(directory)}"


def resolve(program: str, args: Sequence[str], cwd: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The target of ``program args``, or None when it cannot be read."""
    env = os.environ if env is None else env
    try:
        if program == "kubectl":
            return kube(args, env, "--context")
        if program == "helm":
            return kube(args, env, "--kube-context")
        if program == "git":
            i, repo_dir = 0, cwd
            while i < len(args) and args[i].startswith("-"):
                if args[i] == "-C" and i + 1 < len(args):
                    given = args[i + 1]
                    repo_dir = given if os.path.isabs(given) else os.path.join(cwd or ".", given)
                i += 2 if args[i] in _GIT_VALUE_OPTIONS else 1
            if i < len(args) and args[i] == "push":
                return git_push(args[i + 1 :], repo_dir)
            return None
        if program in ("terraform", "tofu"):
            return terraform(args, cwd)
    except Exception:  # a target reader must never take the gate down; None asks
        return None
    return None
