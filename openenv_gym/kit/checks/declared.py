"""What the checks hold a server to: a package's declarations and kit files, or, for a server
at a URL, what the server lets us know.

:meth:`Declared.load` reads a package's ``openenv.yaml`` (its ``validation:`` block) and
the kit ``openenv-gym kit`` wrote beside it: canaries, oracle, plan. :meth:`Declared.recorded`
records the canaries over the wire instead, for a server without a kit; nothing is declared
there but, at most, a reward range, and the top is observed later
(:func:`~.learnability.learnability`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ... import spaces
from .. import KIT_FILES, mean_returns
from ..remote import URL_CHANCE_SEEDS, URL_EPISODE_S, URL_MAX_STEPS, URL_RECORDING_S, URL_SEEDS, session
from .play import play

#: How many seeds (from the kit's) a probe plays each of its policies from: a probe's return,
#: like a canary's, is its mean over seeds.
PROBE_SEEDS = 8


@dataclass
class Declared:
    """A package's declarations and kit files, as the checks read them (for a URL, :meth:`recorded`)."""

    root: Path | None
    reward_range: tuple[float, float] | None
    oracle_tolerance: float
    floor_margin: float
    memory_mb: int | None
    canaries: list[dict]
    oracle: dict | None
    plan: dict
    measured: dict

    @classmethod
    def load(cls, root: Path) -> Declared:
        manifest = yaml.safe_load((root / "openenv.yaml").read_text(encoding="utf-8")) or {}
        block = manifest.get("validation")
        if not isinstance(block, dict) or not (root / KIT_FILES["kit"]).is_file():
            raise FileNotFoundError(f"{root} has no validation kit: run `openenv-gym kit {root}` first")

        def read(key: str) -> Any:
            path = root / KIT_FILES[key]
            return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

        reward = block["reward"]
        return cls(
            root=root,
            reward_range=(float(reward["range"][0]), float(reward["range"][1])),
            oracle_tolerance=float(reward.get("oracle_tolerance", 0.0)),
            floor_margin=float(reward["floor_margin"]),
            memory_mb=int(block["resources"]["memory_mb"]),
            canaries=read("canaries")["trajectories"],
            oracle=read("oracle"),
            plan=read("plan"),
            measured=read("kit"),
        )

    @classmethod
    def recorded(cls, url: str, reward_range: tuple[float, float] | None = None, *, chance: bool = False) -> Declared:
        """What a server at ``url`` lets us know without a kit: its canaries' trajectories,
        played now on :data:`~.remote.URL_SEEDS` seeds (:data:`~.remote.URL_CHANCE_SEEDS` when
        ``chance``: a server that ignores seeds, whose episodes are draws, and whose floor is a
        mean that wants more of them, as far as :data:`~.remote.URL_RECORDING_S` seconds allow)
        and cut after :data:`~.remote.URL_MAX_STEPS` steps (a kit's are measured in process,
        where steps are cheap), or after :data:`~.remote.URL_EPISODE_S` seconds. Nothing is
        declared but ``reward_range`` (a package's ``openenv.yaml`` may declare one): no oracle
        or resources; the top and the margin are observed later (:func:`~.learnability.learnability`)."""
        from ..policies import canaries

        trajectories = []
        deadline = time.monotonic() + URL_RECORDING_S
        with session(url) as env:
            for seed in range(URL_CHANCE_SEEDS if chance else URL_SEEDS):
                if seed >= URL_SEEDS and time.monotonic() > deadline:
                    break
                for name, policy in canaries(env.action_space, seed).items():
                    episode = play(env, policy, seed=seed, max_steps=URL_MAX_STEPS, max_seconds=URL_EPISODE_S)
                    trajectories.append({"name": name, "reset": {"seed": seed}, "return": episode.total,
                                         "actions": [spaces.encode(env.action_space, a) for a in episode.actions]})
        return cls(root=None, reward_range=reward_range, oracle_tolerance=0.0, floor_margin=0.0, memory_mb=None,
                   canaries=trajectories, oracle=None, plan={}, measured={"seed": 0})

    @property
    def seed(self) -> int:
        """The kit's seed: its canaries played this one and the seeds after it."""
        return int(self.measured.get("seed", 0))

    @property
    def canary_seeds(self) -> list[int]:
        return sorted({int(t["reset"]["seed"]) for t in self.canaries})

    @property
    def probe_seeds(self) -> list[int]:
        """The seeds a probe plays each of its policies from: the first of the canaries'; at a URL
        (canaries on fewer seeds, and a server that may ignore them), :data:`PROBE_SEEDS` seeds."""
        return self.canary_seeds[:PROBE_SEEDS] if self.root is not None else list(range(PROBE_SEEDS))

    @property
    def floor(self) -> float:
        """The best canary's mean return, as the kit recorded it."""
        return max(mean_returns(self.canaries).values())

    #: At a URL: the best return observed (the learner's, the probes'), when it is above the
    #: canary floor by the observed margin; it stands in for the declared top (None: unknown).
    observed_top: float | None = None

    @property
    def top(self) -> float:
        if self.reward_range is not None:
            return self.reward_range[1]
        assert self.observed_top is not None, "no declared or observed top (the checks needing one SKIP)"
        return self.observed_top

    def within_range(self, reward: float) -> bool:
        """``True`` when ``reward`` is within the declared range (always, without one)."""
        return self.reward_range is None or self.reward_range[0] <= reward <= self.reward_range[1]

    def reached_top(self, total: float) -> bool:
        """``True`` when a return is within the floor margin of the top: what no trivial policy may get."""
        return total >= self.top - self.floor_margin
