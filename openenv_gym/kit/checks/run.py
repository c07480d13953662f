"""Running the checks on a target, and ``openenv-gym check`` itself (:func:`main`).

:func:`run_checks` finds out what the target is (a package with a kit, an env to generate
a kit for, a package without a kit, a server at a URL), starts what needs starting, runs
upstream's graders and then every check here in its order, and gives the report in
upstream's shape, with its :func:`verdict`; :func:`table` shows it in a terminal.

    >>> results = [Result("runtime.episode_isolation", "pass", ["fine"]),
    ...            Result("semantic.oracle_max", "skip", ["no oracle"])]
    >>> verdict(results)
    'warn'
    >>> print(table({"results": [r.as_dict() for r in results], "verdict": verdict(results)}))
    PASS   runtime.episode_isolation  fine
    SKIP   semantic.oracle_max        no oracle
    verdict: WARN
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ...errors import OpenEnvGymError, RemoteError
from .. import KIT_FILES
from ..remote import WEAKER_AT_A_URL, read_facts
from . import hacking, learnability, rfc008, throughput
from .checker import Checker, Result
from .declared import Declared

#: Upstream's evidence for a check it has no grader for.
NOT_IMPLEMENTED = "grader not implemented in this build"
#: Seconds a package without a kit may take to start (openenv's own import takes a few).
PACKAGE_STARTUP_S = 120.0


#: What a check needs that a server at a URL does not give, by check id.
URL_SKIPS = {
    "static.manifest": "upstream's graders read a package's openenv.yaml and start it through a provider; a URL "
    "is a running server (check its package directory instead)",
    "semantic.oracle_max": "no oracle: a URL comes without a validation kit",
    "semantic.replayability": "no recorded trajectories to replay: a URL comes without a validation kit (a seeded "
    "episode replayed in fresh sessions is runtime.episode_determinism)",
}


def is_url(target: str) -> bool:
    """``True`` for the URL of a running server (``http://``, ``https://``, ``ws://``, ``wss://``)."""
    return target.split("://", 1)[0] in ("http", "https", "ws", "wss")


def run_checks(
    target: str | Path,
    *,
    upstream: bool = True,
    progress: Callable[[str], None] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    oracle: str | None = None,
    server_env: dict[str, str] | None = None,
    python: str | None = None,
) -> dict:
    """Every check on ``target``; the report as a JSON-able dict in upstream's shape.

    ``target`` is a package directory holding a validation kit; a Gymnasium id,
    ``module:factory`` or PettingZoo module (with ``env_kwargs``), whose kit (and
    package) :func:`~openenv_gym.kit.make_kit` writes into a temporary directory first,
    with ``oracle`` as its oracle hook; the URL of any OpenEnv server, where what cannot be
    checked without a kit or a server of our own SKIPs, saying why; or a package directory
    without a kit (upstream OpenEnv's ``envs/<env>``), started here with ``server_env`` and
    ``python`` (:class:`~openenv_gym.server.package.PackageServer`) and checked as a URL,
    with the fresh servers and the process a URL lacks, and the reward range its
    ``openenv.yaml`` declares, if it declares one.
    """
    from ..target import is_package

    say = progress or (lambda line: None)
    name = str(target)
    if (is_url(name) or is_package(target)) and (env_kwargs or oracle):
        raise ValueError(f"--env-kwargs and --oracle make a kit for an env; {name} is a "
                         f"{'URL' if is_url(name) else 'package, whose kit `openenv-gym kit PACKAGE` makes'}")
    if (server_env or python) and not (is_package(target) and not has_kit(Path(target))):
        raise ValueError("--server-env and --python start an OpenEnv package without a validation kit "
                         f"(upstream's envs/<env>); {name} is not one")
    if is_url(name):
        return _report(name, _url_results(name.rstrip("/"), say), {})
    if is_package(target) and not has_kit(Path(target)):
        return _report(name, _unkitted_package_results(Path(target), say, server_env, python), {})
    if is_package(target):
        return _package_report(Path(target), name, upstream, say)
    from .. import make_kit

    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # module:factory of this directory, for the server we start too
    with tempfile.TemporaryDirectory(prefix="openenv-gym-check-") as tmp:
        say(f"generating a validation kit for {name} (openenv-gym kit) ...")
        make_kit(name, tmp, env_kwargs=env_kwargs, oracle=oracle)
        return _package_report(Path(tmp), name, upstream, say)


def _package_report(root: Path, name: str, upstream: bool, say: Callable[[str], None]) -> dict:
    """Upstream's graders (unless ``upstream`` is false), then ours, on the package ``root``."""
    from ..upstream import Level, start_package, validate

    kit = Declared.load(root)
    results: list[Result] = []
    report: dict[str, Any] = {}
    if upstream:
        say("upstream graders (openenv.validation) through the local provider ...")
        upstream_report = validate(root, Level.RUNTIME)
        report = json.loads(upstream_report.model_dump_json())
        results.extend(Result(**{k: r[k] for k in ("check_id", "status", "measured", "evidence", "remediation",
                                                    "duration_s")}) for r in report["results"])
    subject = start_package(root)
    try:
        checker = Checker(kit, subject.base_url, lambda: start_package(root).server, subject.process.pid)
        results.extend(_our_checks(checker, say))
    finally:
        subject.stop()
    # Upstream's "not implemented" placeholders give way to the checks implemented here.
    ours = {r.check_id for r in results if r.evidence != [NOT_IMPLEMENTED]}
    results = [r for r in results if not (r.check_id in ours and r.evidence == [NOT_IMPLEMENTED])]
    return _report(name, results, report)


def has_kit(root: Path) -> bool:
    """``True`` when the package ``root`` holds a validation kit (``openenv-gym kit`` wrote one)."""
    return (root / KIT_FILES["kit"]).is_file()


def _declared_range(root: Path) -> tuple[float, float] | None:
    """The reward range a package's ``openenv.yaml`` declares (``validation.reward.range``), if any."""
    manifest = yaml.safe_load((root / "openenv.yaml").read_text(encoding="utf-8")) or {}
    block = manifest.get("validation") if isinstance(manifest, dict) else None
    reward = block.get("reward") if isinstance(block, dict) else None
    declared = reward.get("range") if isinstance(reward, dict) else None
    if isinstance(declared, list) and len(declared) == 2 and all(isinstance(v, (int, float)) for v in declared):
        return float(declared[0]), float(declared[1])
    return None


def _unkitted_package_results(root: Path, say: Callable[[str], None], server_env: dict[str, str] | None,
                              python: str | None) -> list[Result]:
    """A package without a kit, started here and checked as a server at a URL (see :func:`run_checks`)."""
    from ...server.package import PackageServer

    def start() -> PackageServer:
        return PackageServer(root, env=server_env, python=python, startup_timeout=PACKAGE_STARTUP_S)

    say(f"starting {root} (its own app, no validation kit) ...")
    server = start()
    try:
        return _url_results(server.url, say, restart=start, pid=server.pid, reward_range=_declared_range(root),
                            package=root)
    finally:
        server.stop()


def _url_results(url: str, say: Callable[[str], None], *, restart: Callable[[], Any] | None = None,
                 pid: int | None = None, reward_range: tuple[float, float] | None = None,
                 package: Path | None = None) -> list[Result]:
    """Our checks on a server we neither started nor have a kit for: what the server lets us
    know (:func:`~.remote.read_facts`) and canaries recorded over the wire stand in for the
    kit; what needs more SKIPs with :data:`URL_SKIPS`' reason, and what a URL makes weaker
    says so (:data:`~.remote.WEAKER_AT_A_URL`). A server whose env fails to reset or step gets
    a report too: every check ERRORs with what the server said, and what to do about it."""
    say(f"reading {url}: its schema, whether it holds two sessions, whether it honours seeds ...")
    try:
        facts = read_facts(url)
        say(f"recording canaries at {url} ...")
        kit = Declared.recorded(url, reward_range, chance=facts.seed_problem is not None)
    except RemoteError as exc:
        evidence = [f"the server answered {exc.code.value}: {exc.message}"]
        return [Result(check_id, "error", evidence, {}, server_fault(exc.message)) for check_id in ALL_CHECKS]
    checker = Checker(kit, url, restart, pid, facts)
    results = [Result(check_id, "skip", [reason]) for check_id, reason in URL_SKIPS.items()
               if not check_id.startswith(("semantic.", "hacking.", "learning."))]
    if package is not None:  # a package without a kit, started here
        results[0] = Result("static.manifest", "skip", [
            f"upstream's static grader reads the package's validation: block, and {package} has none: for "
            f"an env openenv-gym serves, run `openenv-gym kit {package}` first for every check a kit allows"])
    results.extend(_our_checks(checker, say))
    for result in results:
        weaker = WEAKER_AT_A_URL.get(result.check_id)
        restarted = restart is not None and result.check_id == "runtime.episode_determinism"
        if weaker and result.status in ("pass", "fail") and not restarted:
            result.evidence.append(f"weaker at a URL: {weaker}")
    return results


def server_fault(message: str) -> str:
    """What to do about an env that fails on the server, in words a user can act on."""
    if "nltk" in message.lower():
        return ("the server's env needs NLTK data it could not load (an offline server cannot download it): run "
                "`python -m nltk.downloader <the data it names>` where the server runs, or serve a game that needs "
                "none (upstream textarena_env: TEXTARENA_ENV_ID=GuessTheNumber-v0; openenv-gym's "
                "gym.make('openenv/TextArena-v0') plays it offline)")
    return "the server's env raised on reset or step: its log has the traceback; fix the env, or its configuration"


def _our_checks(checker: Checker, say: Callable[[str], None]) -> list[Result]:
    """The checks implemented here, in order; those :data:`URL_SKIPS` names SKIP on a URL."""
    returns: dict[str, float] = {}  # the canaries' returns over the wire, played once for 4 checks

    def floor_gap(checker: Checker) -> Result:
        returns.update(rfc008.canary_returns(checker))
        return rfc008.floor_gap(checker, returns)

    plan: list[tuple[str, Callable[[Checker], Result]]] = [
        ("runtime.episode_determinism", rfc008.episode_determinism),
        ("runtime.episode_isolation", rfc008.episode_isolation),
        # Before the checks that compare with the top: at a URL, its best return is the observed top.
        ("learning.learnability", learnability.learnability),
        ("semantic.oracle_max", rfc008.oracle_max),
        ("semantic.floor_gap", floor_gap),
        ("semantic.canary_floor", functools.partial(rfc008.canary_floor, returns=returns)),
        ("semantic.replayability", functools.partial(rfc008.replayability, returns=returns)),
        ("semantic.no_solution_leakage", functools.partial(rfc008.no_solution_leakage, returns=returns)),
        ("hacking.repeated_action", hacking.repeated_action),
        ("hacking.out_of_space", hacking.out_of_space),
        ("hacking.boundary_actions", hacking.boundary_actions),
        ("hacking.reset_abuse", hacking.reset_abuse),
        ("perf.throughput", throughput.throughput),
        ("hacking.info_reward", hacking.info_reward),
        ("hacking.reward_range", hacking.reward_range),
        ("semantic.resource_envelope", rfc008.resource_envelope),
    ]
    results = []
    for check_id, check in plan:
        if checker.kit.root is None and check_id in URL_SKIPS:
            results.append(Result(check_id, "skip", [URL_SKIPS[check_id]]))
            say(f"{check_id}: SKIP")
        else:
            results.append(_timed(check_id, functools.partial(check, checker), say))
    return results


#: Every check implemented here, in the order they run.
ALL_CHECKS = (
    "runtime.episode_determinism", "runtime.episode_isolation", "learning.learnability", "semantic.oracle_max",
    "semantic.floor_gap", "semantic.canary_floor", "semantic.replayability", "semantic.no_solution_leakage",
    "hacking.repeated_action", "hacking.out_of_space", "hacking.boundary_actions", "hacking.reset_abuse",
    "perf.throughput", "hacking.info_reward", "hacking.reward_range", "semantic.resource_envelope",
)


def _report(name: str, results: list[Result], upstream_report: dict) -> dict:
    return {
        **upstream_report,
        "report_schema_version": upstream_report.get("report_schema_version", "2"),
        "target": name,
        "checked_by": "openenv-gym check",
        "results": [r.as_dict() for r in results],
        "verdict": verdict(results),
    }


def _timed(name: str, check: Callable[[], Result], say: Callable[[str], None]) -> Result:
    say(f"{name} ...")
    started = time.perf_counter()
    try:
        result = check()
    except Exception as exc:  # noqa: BLE001 - a check that crashes is an ERROR in the report, not a crash
        result = Result(name, "error", [f"{type(exc).__name__}: {exc}"])
    result.duration_s = time.perf_counter() - started
    return result


def verdict(results: list[Result]) -> str:
    """``fail`` when a check failed or errored, ``warn`` when one was skipped, else ``pass``."""
    statuses = {r.status for r in results}
    if statuses & {"fail", "error"}:
        return "fail"
    return "warn" if "skip" in statuses else "pass"


def table(report: dict) -> str:
    """The report as a terminal table: one line per check, then the verdict."""
    width = max(len(r["check_id"]) for r in report["results"])
    lines = [f"{r['status'].upper():<5}  {r['check_id']:<{width}}  {(r['evidence'] or [''])[0]}"
             for r in report["results"]]
    return "\n".join([*lines, f"verdict: {report['verdict'].upper()}"])


def main(target: str, *, json_path: str | None = None, markdown_path: str | None = None,
         html_path: str | None = None, upstream: bool = True, env_kwargs: dict[str, Any] | None = None,
         oracle: str | None = None, server_env: dict[str, str] | None = None, python: str | None = None) -> int:
    """``openenv-gym check``: progress on stderr, the table on stdout, the report in each
    file asked for (whatever its verdict); 1 on FAIL or ERROR."""
    from .. import ProbeError

    try:
        report = run_checks(target, upstream=upstream, progress=lambda line: print(line, file=sys.stderr),
                            env_kwargs=env_kwargs, oracle=oracle, server_env=server_env, python=python)
    except (FileNotFoundError, ImportError, ProbeError, ValueError) as exc:
        where = f"cannot check {target}: " if is_url(target) else ""  # a server's schema: say whose
        print(f"openenv-gym: {where}{exc}", file=sys.stderr)
        return 1
    except (OpenEnvGymError, OSError) as exc:  # a URL that does not answer as an OpenEnv server
        print(f"openenv-gym: cannot check {target}: {exc} (is an OpenEnv server listening there?)", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a server that answers what no OpenEnv server would
        if not is_url(target):
            raise
        print(f"openenv-gym: cannot check {target}: it answered what an OpenEnv server does not "
              f"({type(exc).__name__}: {exc})", file=sys.stderr)
        return 1
    print(table(report))
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    command = " ".join(["openenv-gym check", target, *(["--skip-upstream"] if not upstream else [])])
    if markdown_path:
        from ..report import write_markdown

        write_markdown(report, markdown_path, command=command)
    if html_path:
        from ..report import write_html

        write_html(report, html_path, command=command)
    return 1 if report["verdict"] == "fail" else 0
