"""Git run on repositories Assay did not make (a clone, an unpacked archive with its `.git/`): the settings and
environment under which a reading command runs no program the repository's own config names. `git_history`
builds every command of `changed`/`history` on these; the workspace check for a committed `.assay/` too."""

from __future__ import annotations

import os

# Settings by which a repository's own config (`.git/config`, `config.worktree`, an include) makes a reading command
# run a program; overridden from the command line, whose settings win over every config file.
NO_PROGRAMS = (
    ("core.fsmonitor", "false"),  # a command git runs to learn which files changed
    ("core.hooksPath", "/dev/null"),  # `git diff` rewrites the index, which runs the post-index-change hook
    ("safe.bareRepository", "explicit"),  # bare-repository files (HEAD, objects/, refs/, config) in a plain folder
    ("log.showSignature", "false"),  # gpg.program, run on every signed commit `log` shows
    ("diff.submodule", "short"),  # `log`/`diff` would run `git diff` inside a submodule, under its own config
    ("submodule.recurse", "false"),
)
ENVIRONMENT = {
    "GIT_ALLOW_PROTOCOL": "none",  # no transport: a partial clone's lazy fetch runs remote.*.uploadpack, ssh, helpers
    "GIT_NO_LAZY_FETCH": "1",  # the same, said plainly to a git that knows it (2.44+)
    "GIT_OPTIONAL_LOCKS": "0",  # a read need not rewrite the index where git lets it skip that
    "GIT_TERMINAL_PROMPT": "0",
}


def git_environment(settings: tuple[tuple[str, str], ...] | list[tuple[str, str]] = NO_PROGRAMS) -> dict[str, str]:
    """This process's environment with `ENVIRONMENT` and with `settings` as command-line config (GIT_CONFIG_COUNT,
    after any the user set: a name with `=` or spaces, which `-c` cannot carry, passes intact)."""
    env = {**os.environ, **ENVIRONMENT}
    try:
        first = max(int(env.get("GIT_CONFIG_COUNT", "0")), 0)
    except ValueError:
        first = 0
    for i, (key, value) in enumerate(settings, start=first):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    env["GIT_CONFIG_COUNT"] = str(first + len(settings))
    return env
