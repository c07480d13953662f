"""The checks of ``tests/upstream/`` against upstream OpenEnv's live servers, when their sources
are at hand (CI replays captures instead: ``tests/upstream/test_replay.py``).

    python tests/upstream/live.py --envs /path/to/OpenEnv/envs --python /path/to/venv/bin/python \\
        [--only maze grid_world] [--write docs/upstream.md]

For each upstream env (:data:`~tests.upstream.servers.UPSTREAM_ENVS`), started from its own
package directory, unmodified, on 127.0.0.1: the spaces ``RemoteEnv`` infers; Gymnasium's
``check_env`` on it; 40 sampled steps (with the action mask, or a move of
``info["legal_actions"]``, where the server lists its legal actions), through ``RemoteEnv`` and
through the catalog's ``gym.make("openenv/<Name>-v0", base_url=...)``; ``openenv-gym check
URL``'s verdict and what it found; and, for maze and grid_world, Stable-Baselines3's PPO
trained through ``gym.make``. ``--write`` replaces the part of the file between
``<!-- live:begin -->`` and ``<!-- live:end -->`` with the results.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import re
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import openenv_gym  # noqa: E402
from openenv_gym.spaces.stock import LEGAL_ACTIONS  # noqa: E402
from tests.upstream.servers import UPSTREAM_ENVS, running  # noqa: E402

#: The catalog id of each upstream env this script plays.
CATALOG_IDS = {"echo": "Echo", "connect4": "Connect4", "grid_world": "GridWorld", "maze": "Maze", "chess": "Chess",
               "openspiel": "OpenSpiel", "textarena": "TextArena", "atari": "Atari", "coding": "Coding"}
#: The nine envs the issue names, in its order.
NINE = tuple(CATALOG_IDS)
SAMPLED_STEPS = 40
#: PPO's training steps, and the step limit of its episodes.
PPO_STEPS = 30_000
PPO_EPISODE_STEPS = 100


def sampled_steps(env: gym.Env, steps: int = SAMPLED_STEPS) -> tuple[int, list[str]]:
    """``steps`` sampled steps (legal ones where the env lists them): ``(steps done, errors)``."""
    errors: list[str] = []
    env.action_space.seed(0)
    obs, info = env.reset(seed=0)
    done = 0
    for _ in range(steps):
        mask = info.get("action_mask")
        listed = info.get(LEGAL_ACTIONS)
        if mask is not None and isinstance(env.action_space, gym.spaces.Discrete):
            action = env.action_space.sample(mask=np.asarray(mask, dtype=np.int8)) if mask.any() else 0
        elif listed:
            action = listed[int(env.action_space.np_random.integers(len(listed)))]
        else:
            action = env.action_space.sample()
        try:
            obs, reward, terminated, truncated, info = env.step(action)
        except Exception as exc:  # noqa: BLE001 - counted and reported
            errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
            obs, info = env.reset()
            continue
        done += 1
        if terminated or truncated:
            obs, info = env.reset()
    return done, errors


def check_env_result(url: str) -> str:
    from gymnasium.utils.env_checker import check_env

    env = openenv_gym.RemoteEnv(url)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env, skip_render_check=True)
        return "passes"
    except Exception as exc:  # noqa: BLE001 - the result, in words
        return f"fails: {str(exc).splitlines()[0][:120]}"
    finally:
        env.close()


def ppo(name: str, url: str) -> str:
    """SB3 PPO (MaskablePPO where the env masks) trained through gym.make: returns before and after."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.evaluation import evaluate_policy as masked_evaluation
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy

    results = []
    for algorithm, evaluate in ((PPO, evaluate_policy), (MaskablePPO, masked_evaluation)):
        env = gym.make(f"openenv/{CATALOG_IDS[name]}-v0", base_url=url, max_episode_steps=PPO_EPISODE_STEPS)
        try:
            if algorithm is MaskablePPO and env.unwrapped.action_masks() is None:
                env.reset(seed=0)
                if env.unwrapped.action_masks() is None:
                    continue
            started = time.monotonic()
            model = algorithm("MultiInputPolicy", env, n_steps=256, batch_size=64, ent_coef=0.01, seed=0, device="cpu")
            before = evaluate(model, env, n_eval_episodes=3, deterministic=True)[0]
            model.learn(PPO_STEPS)
            after = evaluate(model, env, n_eval_episodes=3, deterministic=True)[0]
            results.append(f"{algorithm.__name__} {PPO_STEPS} steps: return {before:g} → {after:g} "
                           f"({time.monotonic() - started:.0f} s)")
        finally:
            env.close()
    return "; ".join(results)


def spaces_in_words(url: str) -> tuple[str, str]:
    env = openenv_gym.RemoteEnv(url)
    try:
        return _short(env.observation_space), _short(env.action_space)
    finally:
        env.close()


def _short(space: gym.Space) -> str:
    text = str(space)
    text = re.sub(r"InferredText\(0, 65536, charset=<\d+ printable characters>\)", "Text", text)
    text = re.sub(r"Box\(-9223372036854775808, 9223372036854775807, ", "Box(int64, ", text)
    return text


def check_url(url: str) -> tuple[str, dict[str, str], dict[str, dict]]:
    from openenv_gym.kit.checks import run_checks

    report = run_checks(url)
    return report["verdict"], {r["check_id"]: r["status"] for r in report["results"]}, {
        r["check_id"]: r for r in report["results"]}


def live(name: str, envs: Path, python: str) -> dict[str, Any]:
    env = next(e for e in UPSTREAM_ENVS if e.name == name)
    row: dict[str, Any] = {"name": name, "package": env.package, "server_env": env.server_env}
    started = time.monotonic()
    with running(env, envs, python) as url:
        row["observation"], row["action"] = spaces_in_words(url)
        row["check_env"] = check_env_result(url)
        remote = openenv_gym.RemoteEnv(url)
        try:
            row["sampled"] = sampled_steps(remote)
        finally:
            remote.close()
        made = gym.make(f"openenv/{CATALOG_IDS[name]}-v0", base_url=url)
        try:
            row["catalog_spaces"] = (_short(made.observation_space), _short(made.action_space))
            row["catalog_sampled"] = sampled_steps(made)
        finally:
            made.close()
        row["verdict"], row["statuses"], row["results"] = check_url(url)
        if name in ("maze", "grid_world"):
            row["ppo"] = ppo(name, url)
    row["seconds"] = time.monotonic() - started
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    when = datetime.date.today().isoformat()
    lines = [
        f"Last run: {when}, `python tests/upstream/live.py --envs OpenEnv/envs --python <venv>/bin/python --write "
        f"docs/upstream.md` (openenv 0.10, {platform.python_version()}, upstream's servers unmodified, on 127.0.0.1).",
        "",
        "| upstream env | `check_env` on `RemoteEnv` | 40 sampled steps: `RemoteEnv` / `gym.make` | `check URL` "
        "verdict: pass, skip, fail, error | learnability at the URL |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        statuses = row["statuses"]
        counts = ", ".join(str(sum(s == k for s in statuses.values())) for k in ("pass", "skip", "fail", "error"))
        learned = row["results"]["learning.learnability"]
        learning = f"{learned['status'].upper()}: {learned['evidence'][0][:110]}"
        remote_done, remote_errors = row["sampled"]
        made_done, made_errors = row["catalog_sampled"]
        sampled = (f"{remote_done} ok, {len(remote_errors)} errors / {made_done} ok, {len(made_errors)} errors")
        lines.append(f"| {' '.join([row['package'], _settings(row)]).strip()} | {row['check_env']} | {sampled} | "
                     f"{row['verdict'].upper()} ({counts}) | {learning} |")
    lines += ["", "What failed, by env (each FAIL's first line of evidence):", ""]
    for row in rows:
        failed = [f"`{check}`: {row['results'][check]['evidence'][0][:160]}"
                  for check, status in row["statuses"].items() if status in ("fail", "error")]
        errors = row["sampled"][1] + row["catalog_sampled"][1]
        extra = [f"sampled-step errors: {', '.join(sorted(set(errors)))}"] if errors else []
        if row.get("ppo"):
            extra.append(f"SB3 through gym.make: {row['ppo']}")
        lines.append(f"- **{row['package']}** ({row['seconds']:.0f} s): " + ("; ".join(failed + extra) or "nothing"))
    return "\n".join(lines) + "\n"


def _settings(row: dict[str, Any]) -> str:
    return f"({', '.join(f'{k}={v}' for k, v in row['server_env'].items() if 'NLTK' not in k)})" if row[
        "server_env"] else ""


def write(path: Path, text: str) -> None:
    page = path.read_text(encoding="utf-8")
    begin, end = "<!-- live:begin -->\n", "<!-- live:end -->"
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(head + begin + text + end + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", required=True, help="upstream OpenEnv's envs/ directory")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs upstream's servers")
    parser.add_argument("--only", nargs="*", help="these envs only (short names: maze, atari, ...)")
    parser.add_argument("--write", metavar="FILE", help="write the results into FILE's live section")
    args = parser.parse_args(argv)
    rows = []
    for name in args.only or NINE:
        print(f"{name} ...", flush=True)
        try:
            rows.append(live(name, Path(args.envs), args.python))
        except Exception:  # noqa: BLE001 - one env's failure must not hide the others'
            traceback.print_exc()
            return 1
        print(f"  {rows[-1]['verdict']} in {rows[-1]['seconds']:.0f} s", flush=True)
    text = markdown(rows)
    print(text)
    if args.write:
        write(Path(args.write), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
