"""The built-in ``[paths]`` patterns, alone in a module that imports nothing: the agent gate
reads them on every edit to tell whether a path could be protected before it loads the
matcher (:mod:`gitvow.change_rules`, which re-exports them)."""

from __future__ import annotations

#: The CI and ownership files whose change runs code with the repository's secrets or changes
#: who must review: staged for a human by default. A pattern without ``/`` matches at any depth.
DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    ".github/workflows/**",
    ".github/actions/**",
    ".github/dependabot.yml",
    "CODEOWNERS",
    ".gitlab-ci.yml",
    ".gitlab/ci/**",
    ".forgejo/workflows/**",
    ".gitea/workflows/**",
    ".woodpecker/**",
    ".woodpecker.yml",
    ".circleci/**",
    ".buildkite/**",
    ".drone.yml",
    ".travis.yml",
    "Jenkinsfile",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    ".pre-commit-config.yaml",
)
