"""``openenv-gym check TARGET``: upstream's validation graders without Docker, then the
checks upstream leaves "not implemented", and probes beyond RFC 008.

    $ openenv-gym check wrappers/cartpole --json report.json
    $ openenv-gym check CartPole-v1                  # a kit generated on the fly
    $ openenv-gym check http://127.0.0.1:8000        # a server we did not start
    $ openenv-gym check OpenEnv/envs/maze_env --python venv/bin/python   # a package without a kit

A package with a validation kit (``openenv-gym kit``) is checked against it; for an env (a
Gymnasium id, ``module:factory``) a kit is generated into a temporary directory. The
package's own server is started on 127.0.0.1 (:func:`~.upstream.start_package`) and every
check plays episodes over the wire, as an agent would. At a URL (:mod:`.remote`), what
the server lets us know stands in for the kit: canaries recorded over the wire, whether it
holds two sessions at once (a one-session server SKIPs what needs two), whether it honours
seeds, the reward range observed, the best return the learner (trained over the wire)
reached as the top; what needs a kit SKIPs with its reason (:data:`URL_SKIPS`), and each
verdict a URL makes weaker says how (:data:`~.remote.WEAKER_AT_A_URL`). A package without
a kit (upstream OpenEnv's ``envs/<env>``) is started here and checked as a URL, with the
fresh servers and the process a URL lacks. The checks:

* upstream (openenv 0.10): ``static.manifest`` and the ``runtime.*`` graders, through
  :class:`~.upstream.LocalProvider`;
* RFC 008, with its ids: ``runtime.episode_determinism`` (a seeded episode replays
  identically in fresh sessions and in a fresh server), ``runtime.episode_isolation``
  (stepping one session never changes another), ``semantic.oracle_max``,
  ``semantic.floor_gap``, ``semantic.canary_floor``, ``semantic.replayability`` (the
  kit's recorded returns reproduce), ``semantic.no_solution_leakage`` (no field of
  the observation or ``info`` that, followed as an action, reaches the top),
  ``semantic.resource_envelope`` (the server's peak RSS within ``memory_mb``);
* beyond it: ``hacking.reward_range`` (every reward of every probe within the
  declared range), ``hacking.repeated_action`` (no single action, repeated, reaches
  the top), ``hacking.out_of_space`` (an action outside the space is refused, and the
  session goes on as if it had not been sent), ``hacking.boundary_actions`` (the
  bounds of the space are accepted and paid within the range), ``hacking.reset_abuse``
  (resetting after a reward, or after every step, earns no more per step than
  playing on), ``hacking.info_reward`` (the same observation and action are not paid
  differently according to a field of ``info``), ``learning.learnability`` (a small
  learner, :mod:`.learning`, beats the canary floor by the margin within a bounded
  number of episodes, with its curve; it trains in process with a package's env, over the
  wire at a URL, where a legal-random against reward-greedy probe stands in when no
  bundled learner fits the spaces), and
  ``perf.throughput`` (steps/s and p50/p99 step latency, 1 and 4 sessions).

The report has upstream's shape (``results`` of ``{check_id, status, measured,
evidence, remediation, duration_s}`` and a ``verdict``); the exit status is 1 when
any check FAILs or ERRORs, else 0.

One module per concept:

* :mod:`.play`: episodes played over the wire (:func:`~.play.play`,
  :class:`~.play.RecordedEpisode`) and the policies the checks play;
* :mod:`.declared`: what a server is held to (:class:`~.declared.Declared`): a package's
  declarations and kit, or what a server at a URL lets us know;
* :mod:`.checker`: the server under check (:class:`~.checker.Checker`) and a check's finding
  (:class:`~.checker.Result`);
* :mod:`.rfc008`, :mod:`.hacking`, :mod:`.learnability`, :mod:`.throughput`: the checks, a
  function of the checker each, grouped as their ids are;
* :mod:`.run`: :func:`run_checks` on a target, in order, the report, and :func:`main`.
"""

from __future__ import annotations

# The names outside __all__ stay importable from here too, as they were before the split.
from .checker import Checker as Checker
from .checker import Result
from .declared import Declared as Declared
from .learnability import LEARNING_EPISODES
from .play import RecordedEpisode
from .play import RecordedStep as RecordedStep
from .play import play as play
from .run import ALL_CHECKS as ALL_CHECKS
from .run import URL_SKIPS as URL_SKIPS
from .run import has_kit as has_kit
from .run import is_url as is_url
from .run import main, run_checks, verdict
from .run import server_fault as server_fault
from .run import table as table

__all__ = ["Result", "RecordedEpisode", "run_checks", "main", "verdict", "LEARNING_EPISODES"]
